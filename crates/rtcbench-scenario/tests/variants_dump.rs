//! A dump of what variant expansion gives, to compare two versions of the loader byte for byte:
//! every built-in scenario's variants (name, slug, resolved TOML, fingerprint: what Python's
//! `expand` returns and hashes) and the outcome of inputs that exercise sets and their mistakes.
//!
//! `RTCBENCH_VARIANTS_DUMP=/tmp/a.txt cargo test -p rtcbench-scenario --test variants_dump -- --ignored`
//! at each version, then `cmp` the files.

use std::fmt::Write;

use rtcbench_scenario::{builtin, load};

const MINIMAL: &str = r#"id = "t"
duration = "10s"
[[links]]
name = "fwd"
from = "A"
to = "B"
capacity = "1Mbps"
queue = { size = "100ms" }
[[links]]
name = "bwd"
from = "B"
to = "A"
[[calls]]
from = "A"
to = "B"
"#;

/// `MINIMAL` with `old` replaced by `new` (which must be there).
fn edit(old: &str, new: &str) -> String {
    assert!(MINIMAL.contains(old), "{old}");
    MINIMAL.replacen(old, new, 1)
}

fn builtin_text(id: &str) -> &'static str {
    builtin::find(id).unwrap().0
}

/// Inputs about sets: (label, text, overrides).
fn cases() -> Vec<(String, String, Vec<String>)> {
    let link = |extra: &str| {
        edit("queue = { size = \"100ms\" }\n", &format!("queue = {{ size = \"100ms\" }}\n{extra}\n"))
    };
    let call = |extra: &str| format!("{MINIMAL}{extra}\n");
    let vars = |text: String, vars: &str| format!("{text}[variants]\n{vars}\n");
    let wifi = builtin_text("seed000-5.3.6");
    let lte = builtin_text("seed000-5.4.6");
    let mut out: Vec<(&str, String, Vec<&str>)> = vec![
        ("two anonymous", link("delay = [\"10ms\", \"20ms\"]").replace("capacity = \"1Mbps\"", "capacity = [\"1Mbps\", \"2Mbps\"]"), vec![]),
        ("queue kind and size", edit("queue = { size = \"100ms\" }", "queue = { kind = [\"codel\", \"pie\"], size = [\"100ms\", \"1s\"] }"), vec![]),
        ("mechanism and jitter", link("jitter = { std = [\"1ms\", \"2ms\"] }\nmechanism = [\"link-rate\", \"udp-background\"]\nphysical_capacity = \"4Mbps\""), vec![]),
        ("fec and video", call("fec = [true, false]\nvideo = { max = [\"1Mbps\", \"2Mbps\"] }"), vec![]),
        ("loss set", link("loss = { model = \"gilbert-elliott\", p = [0.01, 0.02], r = 0.5, loss_bad = [1, 0.5] }"), vec![]),
        ("schedule capacity", link("schedule = [{ at = \"0s\", capacity = [\"1Mbps\", \"3Mbps\"] }, { at = \"5s\", capacity = \"2Mbps\" }]").replace("capacity = \"1Mbps\"\n", ""), vec![]),
        ("named and anonymous", vars(link("delay = \"$d\"\njitter = { std = [\"1ms\", \"2ms\"] }"), "d = [\"5ms\", 7]"), vec![]),
        ("named float labels", vars(link("loss = { model = \"bernoulli\", rate = \"$r\" }"), "r = [0.5, 1, 0.25]"), vec![]),
        ("tcp cbr", call("[[tcp]]\nfrom = \"A\"\nto = \"B\"\ncc = [\"newreno\", \"cubic\"]\n[[cbr]]\nfrom = \"A\"\nto = \"B\"\nrate = [\"1kbps\", \"2kbps\"]"), vec![]),
        ("set override", MINIMAL.to_string(), vec!["links.fwd.delay=[\"1ms\", \"2ms\"]", "calls.0.video.max=[\"1Mbps\", \"3Mbps\"]"]),
        ("set pins variant", builtin_text("seed000-5.2.6").to_string(), vec!["delay=25ms"]),
        ("set var override", vars(link("delay = \"$d\""), "d = [\"5ms\"]"), vec!["d=[\"1ms\", \"9ms\"]"]),
        ("wifi sets", wifi.replace("packets = 1000", "packets = [10, 20]").replace("per = 0.1", "per = [0.1, 0.2]"), vec![]),
        ("lte sets", lte.replace("ue_buffer = \"150kB\"", "ue_buffer = [\"150kB\", \"1MB\"]").replace("far = { dl_cqi = 8", "far = { dl_cqi = [8, 9]"), vec![]),
        ("lte ue own radio", lte.replace("node = \"PC4\"\nposition = \"$location\"", "node = \"PC4\"\ndl_cqi = [3, 4]\nul_cqi = 5"), vec![]),
        ("wifi station sets", wifi.replace("node = \"PC4\"\nposition = \"$location\"", "node = \"PC4\"\nsnr_db = [10, 20]"), vec![]),
        // Mistakes.
        ("undeclared link", edit("capacity = \"1Mbps\"", "capacity = \"$cap\""), vec![]),
        ("undeclared with declared", vars(edit("capacity = \"1Mbps\"", "capacity = \"$cap\""), "c = [\"1Mbps\"]"), vec![]),
        ("undeclared named call", call("[[calls]]\nname = \"x\"\nfrom = \"A\"\nto = \"B\"\nvideo = { max = \"$m\" }"), vec![]),
        ("undeclared schedule", link("schedule = [{ at = \"0s\", capacity = \"$c\" }]").replace("capacity = \"1Mbps\"\n", ""), vec![]),
        ("undeclared tcp", call("[[tcp]]\nfrom = \"A\"\nto = \"B\"\ncc = \"$cc\""), vec![]),
        ("undeclared cbr", call("[[cbr]]\nfrom = \"A\"\nto = \"B\"\nrate = \"$r\""), vec![]),
        ("undeclared trace", link("capacity_trace = { file = \"$f\" }").replace("capacity = \"1Mbps\"\n", ""), vec![]),
        ("undeclared wifi", wifi.replace("packets = 1000", "packets = \"$p\""), vec![]),
        ("undeclared wifi position", wifi.replace("per = 0.1", "per = \"$p\""), vec![]),
        ("undeclared lte", lte.replace("ue_buffer = \"150kB\"", "ue_buffer = \"$b\""), vec![]),
        ("undeclared lte ue", lte.replace("node = \"PC4\"\nposition = \"$location\"", "node = \"PC4\"\ndl_cqi = \"$q\"\nul_cqi = 5"), vec![]),
        ("undeclared by set", MINIMAL.to_string(), vec!["links.fwd.delay=$d"]),
        ("unused", vars(MINIMAL.to_string(), "d = [\"1ms\"]\ne = [\"2ms\"]"), vec![]),
        ("empty named", vars(link("delay = \"$d\""), "d = []"), vec![]),
        ("empty anonymous", link("delay = []"), vec![]),
        ("wrong type anonymous", link("delay = [\"10ms\", \"fast\"]"), vec![]),
        ("wrong type anonymous u32", builtin_text("seed000-5.3.6").replace("packets = 1000", "packets = [1, \"x\"]"), vec![]),
        ("wrong type named", vars(link("delay = \"$d\""), "d = [\"10ms\", \"fast\"]"), vec![]),
        ("wrong type named first", vars(link("delay = \"$d\""), "d = [\"fast\", \"10ms\"]"), vec![]),
        ("named list value", vars(link("delay = \"$d\""), "d = [[\"1ms\", \"2ms\"]]"), vec![]),
        ("named var value", vars(link("delay = \"$d\""), "d = [\"$e\"]\ne = [\"1ms\"]"), vec![]),
        ("named table value", vars(link("delay = \"$d\""), "d = [{ x = 1 }]"), vec![]),
        ("named two types", vars(link("delay = \"$d\"\nphysical_capacity = \"$d\""), "d = [\"1ms\"]"), vec![]),
        ("wrong type named by set", vars(link("delay = \"$d\""), "d = [\"10ms\"]"), vec!["d=fast"]),
        ("wrong type by set", MINIMAL.to_string(), vec!["links.fwd.delay=[\"1ms\", 3]"]),
        ("invalid variant", link("delay = [\"10ms\", \"100s\"]"), vec![]),
        ("invalid named variant", vars(link("delay = \"$d\""), "d = [\"10ms\", \"100s\"]"), vec![]),
        ("set at a list", call("[[conferences]]\ntopology = \"mesh\"\nparticipants = \"$p\""), vec![]),
        ("set of lists", call("[[conferences]]\ntopology = \"mesh\"\nparticipants = [[\"A\", \"B\"], [\"B\", \"A\"]]"), vec![]),
        ("set at a table", edit("queue = { size = \"100ms\" }", "queue = [{ size = \"100ms\" }, { size = \"1s\" }]"), vec![]),
        ("dollar name", edit("[[calls]]\n", "[[calls]]\nname = \"$x\"\n"), vec![]),
        ("dollar literal in set", link("capacity_trace = { file = [\"$x\", \"y.csv\"], format = \"csv\" }").replace("capacity = \"1Mbps\"\n", ""), vec![]),
        ("conference var", format!("{}[variants]\nf = [true, \"flexfec\"]\n", builtin_text("mesh-3").replace("call = { video = {", "call = { fec = \"$f\", video = {")), vec![]),
        ("too many", vars(link("delay = \"$a\"\njitter = { std = \"$b\", n_std = [1, 2, 3] }"), &format!("a = [{}]\nb = [{}]", (0..200).map(|i| format!("\"{i}ms\"")).collect::<Vec<_>>().join(","), (0..100).map(|i| format!("\"{i}us\"")).collect::<Vec<_>>().join(","))), vec![]),
    ];
    out.sort_by_key(|(label, _, _)| *label);
    out.into_iter()
        .map(|(label, text, sets)| (label.to_string(), text, sets.into_iter().map(String::from).collect()))
        .collect()
}

fn dump_load(out: &mut String, text: &str, origin: &str, sets: &[String]) {
    match load(text, origin, sets) {
        Ok(variants) => {
            for v in variants {
                writeln!(
                    out,
                    "-- variant {:?} slug {:?} id {:?} fingerprint {}",
                    v.variant,
                    v.variant_slug(),
                    v.spec.id,
                    v.fingerprint
                )
                .unwrap();
                out.push_str(&v.to_toml());
            }
        }
        Err(e) => writeln!(
            out,
            "-- error {e}\n   origin {:?} field {:?} line {:?} related {:?} message {:?}",
            e.origin, e.field, e.line, e.related, e.message
        )
        .unwrap(),
    }
}

#[test]
#[ignore = "a tool: writes the dump to $RTCBENCH_VARIANTS_DUMP"]
fn dump_variants() {
    let path =
        std::env::var("RTCBENCH_VARIANTS_DUMP").expect("set RTCBENCH_VARIANTS_DUMP to the output file");
    let mut out = String::new();
    let mut count = 0;
    for (id, path, text) in builtin::BUILTIN {
        writeln!(out, "== builtin {id} ({path})").unwrap();
        count += load(text, &format!("builtin:{path}"), &[]).map_or(0, |v| v.len());
        dump_load(&mut out, text, &format!("builtin:{path}"), &[]);
    }
    for (label, text, sets) in cases() {
        writeln!(out, "== case {label} {sets:?}").unwrap();
        dump_load(&mut out, &text, "case.toml", &sets);
    }
    writeln!(out, "== {count} built-in variants").unwrap();
    std::fs::write(path, out).unwrap();
}
