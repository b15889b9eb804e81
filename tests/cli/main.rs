//! Integration tests: the built `judge` binary in a temp project, against a fake provider
//! server on 127.0.0.1. No test touches the real network.

#[path = "../common/mod.rs"]
mod common;

mod check;
mod compare;
mod faults;
mod generate;
mod label;
mod live;
mod rank;
