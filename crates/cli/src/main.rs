//! `pgc`: secure two-party computation with garbled circuits.

mod bench;
mod circuits;
mod commands;
mod demo;
mod progress;
mod report;

use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

const ABOUT: &str = "\
pgc runs a Boolean circuit between two parties who each hold private inputs. Each party learns \
the outputs and nothing else about the other's inputs (semi-honest security: this holds when \
both run pgc unmodified; a party that runs modified software could learn or change more).

Party A garbles the circuit, party B evaluates it (Yao's garbled circuits with free-XOR and \
half-gates; B's input labels arrive by IKNP oblivious transfer).";

const AFTER_HELP: &str = "\
Quick start (two machines):
  machine 1:  pgc run aes_128.txt --party a --listen 0.0.0.0:7000 --input 0x000102030405060708090a0b0c0d0e0f
  machine 2:  pgc run aes_128.txt --party b --connect machine1:7000 --input 0x00112233445566778899aabbccddeeff

Try it on one machine:  pgc demo
Circuits: Bristol Fashion (basic and MAND) and the old Bristol format, or builtin:NAME
(builtin:millionaires, builtin:aes128, builtin:random:WIDTHxDEPTH).";

const RUN_EXAMPLES: &str = "\
Examples:
  # A holds the key, B the plaintext of a Bristol Fashion AES-128 circuit:
  pgc run aes_128.txt --party a --listen 0.0.0.0:7000 --input 0x000102030405060708090a0b0c0d0e0f
  pgc run aes_128.txt --party b --connect hostA:7000 --input 0x00112233445566778899aabbccddeeff

  # A owns input values 0 and 2 of a three-input circuit (both sides pass the same flag):
  pgc run ModAdd512.txt --party a --inputs-of-a 0,2 --listen 0.0.0.0:7000 --input 5 --input 97
  pgc run ModAdd512.txt --party b --inputs-of-a 0,2 --connect hostA:7000 --input 9

Either side may start first: --connect retries until --timeout. Both sides must load the same
circuit; a different file, version or input assignment stops both with an error.";

const LOCAL_EXAMPLES: &str = "\
Examples:
  pgc local builtin:millionaires --a 5000000 --b 7250000
  pgc local sha256.txt --a 0x61626380...18 --b 0x6a09e667...5be0cd19 --json";

#[derive(Parser)]
#[command(name = "pgc", version, about = "Secure two-party computation with garbled circuits",
    long_about = ABOUT, after_help = AFTER_HELP)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Show a circuit's size, AND depth, level widths and wire memory.
    Info(commands::InfoArgs),
    /// Evaluate a circuit in the clear on all its inputs (no security; for checking).
    Eval(commands::EvalArgs),
    /// Run one party of the secure protocol against a peer on the network.
    #[command(after_help = RUN_EXAMPLES)]
    Run(commands::RunArgs),
    /// Run both parties on this machine over loopback TCP (for trying things out).
    #[command(after_help = LOCAL_EXAMPLES)]
    Local(commands::LocalArgs),
    /// Measure garbling, OT and end-to-end protocol speed on generated circuits.
    Bench(bench::BenchArgs),
    /// Show the whole system working: secure millionaires' comparison and AES-128.
    Demo(DemoArgs),
}

#[derive(Args)]
struct DemoArgs {
    /// Print results as JSON.
    #[arg(long)]
    json: bool,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Info(a) => commands::info(a),
        Command::Eval(a) => commands::eval(a),
        Command::Run(a) => commands::run(a),
        Command::Local(a) => commands::local(a),
        Command::Bench(a) => bench::bench(a),
        Command::Demo(a) => demo::demo(a.json),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {}", error_text(&e));
            ExitCode::FAILURE
        }
    }
}

/// The error and its causes on one line, leaving out a cause whose text the message before
/// it already contains (many errors quote their source).
fn error_text(e: &anyhow::Error) -> String {
    let mut text = String::new();
    for cause in e.chain() {
        let c = cause.to_string();
        if !text.contains(&c) {
            if !text.is_empty() {
                text.push_str(": ");
            }
            text.push_str(&c);
        }
    }
    text
}
