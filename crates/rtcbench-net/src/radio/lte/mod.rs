//! One LTE FDD cell (in progress): the tables of its link adaptation.

pub mod amc;
pub mod tbs;
