//! Thin glue per subcommand: reads config and inputs, calls the core and the engine, writes
//! outputs. `dispatch` picks the command.

pub mod check;
pub mod compare;
pub mod generate;
pub mod label;
pub mod rank;
pub mod run;

use crate::cli::{Cli, Command};
use crate::error::Outcome;

/// Runs the parsed command line.
pub fn dispatch(cli: Cli) -> anyhow::Result<Outcome> {
    match &cli.command {
        Command::Generate(args) => generate::run(&cli, args),
        Command::Compare(args) => compare::run(&cli, args),
        Command::Check(args) => check::run(&cli, args),
        Command::Rank(args) => rank::run(&cli, args),
        Command::Run(args) => run::run(&cli, args),
        Command::Label(args) => label::run(&cli, args),
    }
}
