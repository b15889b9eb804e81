//! The shell that runs work: the run directory (`run_dir`), the bounded worker pool with a
//! stop signal (`scheduler`) and the manifest.

pub mod budget;
pub mod calls;
pub mod manifest;
pub mod run_dir;
pub mod scheduler;
