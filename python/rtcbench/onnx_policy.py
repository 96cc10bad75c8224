"""ONNX policies with the MMSys 2024 bandwidth estimation challenge's interface, built from numpy
weights with the `onnx` package (``pip install 'rtcbench[learned]'``): what the training example
exports and what the tests run through ``--cc onnx:MODEL`` (docs/controllers/onnx.md).

    model = onnx_policy.lstm_policy(onnx_policy.LstmWeights.random(hidden=128, seed=1))
    onnx_policy.save(model, "policy.onnx")

The graph: the observation scaled feature by feature, one LSTM step from the given hidden and cell
states, a linear head, and a softplus that keeps both outputs non-negative; the estimate is the
first output times `out_scale` (bit/s). Inputs `obs` [1, 1, 150], `hidden_states` and `cell_states`
[1, H]; outputs `output` [1, 1, 2], `state_out` and `cell_out` [1, H].
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from rtcbench.results import write_bytes_atomic

__all__ = ["OPSET", "LstmWeights", "MlpWeights", "lstm_policy", "mlp_policy", "save"]

OBSERVATION_LEN = 150
OPSET = 17
"""The ONNX operator set the models use (tract reads it)."""


def _onnx() -> Any:
    try:
        import onnx
    except ImportError:
        raise ImportError(
            "building ONNX policies needs the onnx package: pip install 'rtcbench[learned]'"
        ) from None
    return onnx


@dataclass
class LstmWeights:
    """An LSTM policy's parameters, in ONNX's layout (gates i, o, f, c): `w` [4H, 150], `r` [4H, H],
    `b` [8H] (input then recurrent biases), the head `head_w` [H, 2] and `head_b` [2], the
    per-feature `obs_scale` [150] and the estimate's `out_scale` (bit/s per unit)."""

    w: np.ndarray
    r: np.ndarray
    b: np.ndarray
    head_w: np.ndarray
    head_b: np.ndarray
    obs_scale: np.ndarray
    out_scale: float = 1e6

    @property
    def hidden(self) -> int:
        return int(self.r.shape[1])

    @classmethod
    def random(cls, hidden: int, seed: int = 0, obs_scale: np.ndarray | None = None) -> LstmWeights:
        """Small random weights (a policy that runs, not one that estimates well)."""
        rng = np.random.default_rng(seed)
        k = 1.0 / np.sqrt(hidden)
        return cls(
            w=rng.uniform(-k, k, (4 * hidden, OBSERVATION_LEN)).astype(np.float32),
            r=rng.uniform(-k, k, (4 * hidden, hidden)).astype(np.float32),
            b=np.zeros(8 * hidden, dtype=np.float32),
            head_w=rng.uniform(-k, k, (hidden, 2)).astype(np.float32),
            head_b=np.zeros(2, dtype=np.float32),
            obs_scale=np.ones(OBSERVATION_LEN, dtype=np.float32) if obs_scale is None else obs_scale,
        )


def lstm_policy(weights: LstmWeights, *, producer: str = "rtcbench") -> Any:
    """The `onnx.ModelProto` of an LSTM policy with `weights` (module docs)."""
    onnx = _onnx()
    from onnx import TensorProto, helper, numpy_helper

    h = weights.hidden

    def const(name: str, value: np.ndarray) -> Any:
        return numpy_helper.from_array(np.asarray(value), name)

    f32 = np.float32
    initializers = [
        const("obs_scale", weights.obs_scale.astype(f32).reshape(1, 1, OBSERVATION_LEN)),
        const("W", weights.w.astype(f32).reshape(1, 4 * h, OBSERVATION_LEN)),
        const("R", weights.r.astype(f32).reshape(1, 4 * h, h)),
        const("B", weights.b.astype(f32).reshape(1, 8 * h)),
        const("head_w", weights.head_w.astype(f32)),
        const("head_b", weights.head_b.astype(f32)),
        const("out_scale", np.array([weights.out_scale, 1.0], dtype=f32)),
        const("axis0", np.array([0], dtype=np.int64)),
        const("out_shape", np.array([1, 1, 2], dtype=np.int64)),
    ]
    nodes = [
        helper.make_node("Mul", ["obs", "obs_scale"], ["x"]),
        helper.make_node("Unsqueeze", ["hidden_states", "axis0"], ["h0"]),
        helper.make_node("Unsqueeze", ["cell_states", "axis0"], ["c0"]),
        helper.make_node("LSTM", ["x", "W", "R", "B", "", "h0", "c0"], ["y", "y_h", "y_c"], hidden_size=h),
        helper.make_node("Squeeze", ["y_h", "axis0"], ["state_out"]),
        helper.make_node("Squeeze", ["y_c", "axis0"], ["cell_out"]),
        helper.make_node("MatMul", ["state_out", "head_w"], ["head"]),
        helper.make_node("Add", ["head", "head_b"], ["head_b_added"]),
        helper.make_node("Softplus", ["head_b_added"], ["positive"]),
        helper.make_node("Mul", ["positive", "out_scale"], ["scaled"]),
        helper.make_node("Reshape", ["scaled", "out_shape"], ["output"]),
    ]
    graph = helper.make_graph(
        nodes,
        "lstm_policy",
        [
            helper.make_tensor_value_info("obs", TensorProto.FLOAT, [1, 1, OBSERVATION_LEN]),
            helper.make_tensor_value_info("hidden_states", TensorProto.FLOAT, [1, h]),
            helper.make_tensor_value_info("cell_states", TensorProto.FLOAT, [1, h]),
        ],
        [
            helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, 1, 2]),
            helper.make_tensor_value_info("state_out", TensorProto.FLOAT, [1, h]),
            helper.make_tensor_value_info("cell_out", TensorProto.FLOAT, [1, h]),
        ],
        initializers,
    )
    model = helper.make_model(graph, producer_name=producer, opset_imports=[helper.make_opsetid("", OPSET)])
    onnx.checker.check_model(model)
    return model


def save(model: Any, path: str | Path) -> Path:
    """Writes `model` to `path`, whole or not at all."""
    return write_bytes_atomic(Path(path), model.SerializeToString())


@dataclass
class MlpWeights:
    """A feed-forward policy's parameters: the estimate is exp(relu(z · w1 + b1) · w2 + b2) bit/s,
    where z = log(1 + max(obs, 0) · `obs_scale`) feature by feature: `w1` [150, K], `b1` [K],
    `w2` [K, 1], `b2` [1]. No recurrent state (the observation's long intervals carry the history);
    the spread output is 0."""

    w1: np.ndarray
    b1: np.ndarray
    w2: np.ndarray
    b2: np.ndarray
    obs_scale: np.ndarray

    @property
    def hidden(self) -> int:
        return int(self.w1.shape[1])


def mlp_policy(weights: MlpWeights, *, producer: str = "rtcbench") -> Any:
    """The `onnx.ModelProto` of a feed-forward policy with `weights` (`MlpWeights`): input `obs`,
    output `output` [1, 1, 2] (the estimate, then 0)."""
    onnx = _onnx()
    from onnx import TensorProto, helper, numpy_helper

    f32 = np.float32

    def const(name: str, value: np.ndarray) -> Any:
        return numpy_helper.from_array(np.asarray(value), name)

    initializers = [
        const("obs_scale", weights.obs_scale.astype(f32).reshape(1, OBSERVATION_LEN)),
        const("zero", np.zeros(1, dtype=f32)),
        const("one", np.ones(1, dtype=f32)),
        const("w1", weights.w1.astype(f32)),
        const("b1", weights.b1.astype(f32)),
        const("w2", weights.w2.astype(f32)),
        const("b2", weights.b2.astype(f32)),
        const("spread", np.zeros((1, 1), dtype=f32)),
        const("flat", np.array([1, OBSERVATION_LEN], dtype=np.int64)),
        const("out_shape", np.array([1, 1, 2], dtype=np.int64)),
    ]
    nodes = [
        helper.make_node("Reshape", ["obs", "flat"], ["x"]),
        helper.make_node("Max", ["x", "zero"], ["x_pos"]),
        helper.make_node("Mul", ["x_pos", "obs_scale"], ["x_scaled"]),
        helper.make_node("Add", ["x_scaled", "one"], ["x_plus_one"]),
        helper.make_node("Log", ["x_plus_one"], ["z"]),
        helper.make_node("MatMul", ["z", "w1"], ["h_lin"]),
        helper.make_node("Add", ["h_lin", "b1"], ["h_pre"]),
        helper.make_node("Relu", ["h_pre"], ["h"]),
        helper.make_node("MatMul", ["h", "w2"], ["y_lin"]),
        helper.make_node("Add", ["y_lin", "b2"], ["log_rate"]),
        helper.make_node("Exp", ["log_rate"], ["rate"]),
        helper.make_node("Concat", ["rate", "spread"], ["pair"], axis=1),
        helper.make_node("Reshape", ["pair", "out_shape"], ["output"]),
    ]
    graph = helper.make_graph(
        nodes,
        "mlp_policy",
        [helper.make_tensor_value_info("obs", TensorProto.FLOAT, [1, 1, OBSERVATION_LEN])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, 1, 2])],
        initializers,
    )
    model = helper.make_model(graph, producer_name=producer, opset_imports=[helper.make_opsetid("", OPSET)])
    onnx.checker.check_model(model)
    return model
