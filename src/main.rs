//! Entry point: run the CLI, print any error, exit with its documented code.

fn main() -> std::process::ExitCode {
    judge::main_entry()
}
