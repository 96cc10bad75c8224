//! Shared media: one element with several attachment points (ports), so a route crosses it as
//! (element, port in, port out) rather than as a point-to-point link. [`wifi`]: one IEEE 802.11
//! BSS. (An LTE cell will sit beside it.)

pub mod wifi;
