//! Shared media: one element with several attachment points (ports), so a route crosses it as
//! (element, port in, port out) rather than as a point-to-point link. [`wifi`]: one IEEE 802.11
//! BSS. [`lte`]: one LTE FDD cell (eNB and UEs).

pub mod lte;
pub mod wifi;
