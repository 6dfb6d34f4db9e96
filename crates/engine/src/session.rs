//! Running the protocol for one party (`pgc run`, `pgc.run`) or for both in this process
//! (`pgc local`, `pgc.local`): the circuit loaded as the protocol needs it, the inputs
//! gathered by name, the protocol chosen, the connection watched. Printing the results is
//! the caller's (the CLI prints lines or JSON; Python returns values).
//!
//! The protocols themselves live in `pgc_protocol` (Yao: `yao`, the parallel modes:
//! `parallel`, cut-and-choose and dual execution: `malicious`, GMW: `gmw`).

use std::path::PathBuf;
use std::sync::atomic::AtomicU64;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use pgc_circuit::{
    GateSource, Interface, Layout, Owner, ParallelCircuit, ValueFormat, Visibility, WithValueFormat,
};
use pgc_net::connect::{PeerChannel, accept_peer, connect_peer_noting};
use pgc_net::{SharedLink, TcpChannel, TcpListenerHandle};
use pgc_protocol::choice::{CostModel, agree_on_protocol, circuit_shape};
use pgc_protocol::malicious::run_secured;
use pgc_protocol::parallel::{ParallelConfig, ParallelExtras, ParallelMode, run_parallel_with};
use pgc_protocol::{
    GmwConfig, LocalSecurity, LocalTcpOptions, Outcome, Party, ProtocolChoice, RunOptions,
    RunStats, Security, run_gmw, run_local_gmw, run_local_parallel_secured, run_local_tcp_with,
};
use serde_json::Value;

use crate::circuits::{self, CircuitArgs, Loaded};
use crate::level::LevelArgs;
use crate::options::{DeviceArg, ProtocolArgs};
use crate::progress::Progress;
use crate::protocol_arg::ProtocolChoiceArgs;
use crate::security::SecurityArgs;
use crate::typed_io::{self, FlagFor, Gathered, Scope};
use crate::watchdog::{Side, Watchdog, WatchedStreams};

/// Dual execution reveals every output to both parties (each evaluates the other's
/// circuit and the outputs are compared), so an output for one party only is refused.
pub fn check_outputs_for_level(
    level: Security,
    visibility: &[Visibility],
    interface: Option<&Interface>,
) -> Result<()> {
    if level != Security::DualExecution || visibility.iter().all(|v| *v == Visibility::Both) {
        return Ok(());
    }
    let private: Vec<String> = match interface {
        Some(iface) => iface
            .outputs
            .iter()
            .filter(|p| p.visibility != Visibility::Both)
            .map(|p| p.name.clone())
            .collect(),
        None => vec![],
    };
    bail!(
        "--security dual-execution reveals every output to both parties, but {} for one \
         party only; reveal every output to both (OUTPUT_x), or use --security malicious",
        if private.is_empty() {
            "this circuit has outputs".to_string()
        } else {
            let verb = if private.len() == 1 { "is" } else { "are" };
            format!("{} {verb}", private.join(", "))
        }
    )
}

pub fn refuse_inputs_file(file: &Option<PathBuf>) -> Result<()> {
    if file.is_some() {
        bail!(
            "--inputs FILE.json needs a compiled program (.c or .pgc) whose inputs have names; \
             give a Bristol circuit's values in order with --input/--a/--b"
        );
    }
    Ok(())
}

/// Who owns each input and who sees each output: from the program's names, or (Bristol)
/// `--inputs-of-a` and every output revealed to both.
pub fn roles(
    interface: Option<&Interface>,
    layout: &Layout,
    p: &ProtocolArgs,
) -> Result<(Vec<Party>, Vec<Visibility>)> {
    match interface {
        Some(iface) => {
            if p.inputs_of_a.is_some() {
                bail!(
                    "--inputs-of-a applies to Bristol circuits; in a compiled program the \
                     INPUT_A_/INPUT_B_ names say who owns each input"
                );
            }
            Ok((typed_io::owners(iface), typed_io::visibility(iface)))
        }
        None => Ok((
            circuits::owners(layout, p.inputs_of_a.as_deref())?,
            pgc_protocol::all_visible(layout),
        )),
    }
}

/// The circuit as phases and regions for the parallel protocol, or `None` where it runs
/// the sequential protocol (`--parallel none`, and generated circuits, which are never
/// held in memory).
pub fn parallel_form(
    program: &circuits::Program,
    config: &ParallelConfig,
) -> Result<Option<ParallelCircuit>> {
    if config.mode == ParallelMode::None {
        return Ok(None);
    }
    if let Some(pc) = &program.parallel {
        return Ok(Some(pc.clone()));
    }
    match &program.circuit {
        Loaded::Memory(c) => Ok(Some(ParallelCircuit::sequential(c).context(
            "this circuit is not in single-assignment form, which the parallel protocol needs; \
             run it with --parallel none",
        )?)),
        Loaded::Generated(_) | Loaded::Unrolled(_) => Ok(None),
        Loaded::Compact(_) => {
            if config.mode != ParallelMode::Auto {
                bail!(
                    "compact circuits run sequentially: use --parallel none (or auto), or \
                     compile with --compact never to unroll the program for the parallel modes"
                );
            }
            Ok(None)
        }
    }
}

/// Loads what a protocol run needs: the sequential protocol takes the circuit levelized
/// and packed into slots; the parallel one takes it as phases and regions. Under
/// `--parallel auto` the circuit is loaded first and then `config` is set to what auto
/// chose for it (see [`pgc_protocol::auto`]); the note saying so is returned, for the
/// caller to print once the inputs are known to be good (an input error comes first).
/// `threads_given`: `--threads` was given; `both_parties_here`: under `pgc local`; `who`
/// prefixes the note (`"party A: "` under `run`).
pub fn load_for_protocol(
    c: &CircuitArgs,
    config: &mut ParallelConfig,
    threads_given: bool,
    both_parties_here: bool,
    quiet: bool,
    who: &str,
    loaded: Option<&circuits::Program>,
) -> Result<(circuits::Program, Option<String>)> {
    // A program the caller holds in memory already is copied, not loaded again.
    let held = loaded.filter(|p| matches!(p.circuit, Loaded::Memory(_)));
    match config.mode {
        ParallelMode::None => match held.and_then(|p| circuits::prepare_copy(p, &c.circuit)) {
            Some(prepared) => prepared.map(|p| (p, None)),
            None => circuits::load_for_run(c, c.stream_for_run(), quiet).map(|p| (p, None)),
        },
        ParallelMode::Auto => {
            // Loaded as for the sequential protocol (streamed only when it must be), but
            // not yet levelized: that is done only if auto runs it sequentially.
            let owned = match held {
                Some(_) => None,
                None => Some(circuits::load_streamed(c, c.stream_for_run(), quiet)?),
            };
            let program = held.or(owned.as_ref()).context("a program is loaded")?;
            let shared_cores = both_parties_here
                .then(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
            let choice = auto_choice(program, config.threads, threads_given, shared_cores);
            let note = (!quiet).then(|| {
                format!(
                    "{who}--parallel auto chose {}: {}",
                    choice.mode.name(),
                    choice.reason
                )
            });
            config.mode = choice.mode;
            config.threads = choice.threads;
            let sequential = choice.mode == ParallelMode::None;
            let program = match (owned, held) {
                (Some(program), _) if sequential => circuits::prepare(program, &c.circuit),
                (Some(program), _) => Ok(program),
                (None, Some(p)) if sequential => {
                    circuits::prepare_copy(p, &c.circuit).context("a program held in memory")?
                }
                (None, Some(p)) => circuits::copy_in_memory(p).context("a program held in memory"),
                (None, None) => bail!("no program loaded"),
            };
            Ok((program?, note))
        }
        _ => {
            if c.stream {
                bail!("--stream runs the sequential protocol: add --parallel none (on both sides)");
            }
            match held.and_then(circuits::copy_in_memory) {
                Some(p) => Ok((p, None)),
                None => {
                    circuits::load_streamed(c, circuits::Stream::Never, quiet).map(|p| (p, None))
                }
            }
        }
    }
}

/// What `--parallel auto` runs `program` with. The choice depends only on the circuit (see
/// [`pgc_protocol::auto`]), so two parties loading the same program choose alike.
/// `threads_given`: whether `--threads` was given (compact circuits spread their calls
/// only then); `shared_cores`: the cores both parties share under `pgc local`.
pub fn auto_choice(
    program: &circuits::Program,
    threads: usize,
    threads_given: bool,
    shared_cores: Option<usize>,
) -> pgc_protocol::auto::AutoChoice {
    let sequential = |reason: &str| pgc_protocol::auto::AutoChoice {
        mode: ParallelMode::None,
        threads: 1,
        reason: reason.to_string(),
    };
    match (&program.circuit, &program.parallel) {
        (Loaded::Memory(_), Some(pc)) => pgc_protocol::auto::choose(pc, threads),
        (Loaded::Memory(_), None) => sequential(
            "the circuit has no parallel regions: the sequential protocol garbles it in \
             AND-level batches",
        ),
        (Loaded::Compact(_), _) => {
            // Spreading calls has not been measured on real cores yet, and on one core it
            // only adds the scheduling: by default one thread.
            let wanted = if threads_given { threads } else { 1 };
            // Both parties on one machine: more threads than cores would make each wait for
            // the other's (measured: 4× slower on EDT-63 with 2 + 2 threads on 2 vCPUs).
            let threads = match shared_cores {
                Some(cores) => wanted.min((cores / 2).max(1)),
                None => wanted,
            };
            let reason = if threads < wanted {
                format!(
                    "a compact circuit runs the sequential protocol, its calls that share no \
                     wire on {threads} thread(s): --threads {wanted} cut since both parties \
                     share {} core(s)",
                    shared_cores.unwrap_or(1)
                )
            } else if threads > 1 {
                format!(
                    "a compact circuit runs the sequential protocol, its calls that share no \
                     wire on {threads} threads (the tables and their order are those of one \
                     thread)"
                )
            } else {
                "a compact circuit runs the sequential protocol on one thread (give --threads \
                 to run its calls that share no wire on several)"
                    .to_string()
            };
            pgc_protocol::auto::AutoChoice {
                mode: ParallelMode::None,
                threads,
                reason,
            }
        }
        (Loaded::Generated(_), _) => {
            sequential("generated circuits are garbled as they are generated, in order")
        }
        (Loaded::Unrolled(_), _) => {
            sequential("the circuit is streamed from its file, which runs sequentially")
        }
    }
}

/// Refuses `--device gpu` for a run the GPU cannot take, before inputs are read or anything
/// connects (`--protocol auto` may yet pick GMW, which the run itself then refuses).
fn check_gpu_early(
    device: DeviceArg,
    protocol: ProtocolChoice,
    level: Security,
    sequential: bool,
) -> Result<()> {
    if device == DeviceArg::Gpu {
        let yao_unless_gmw = match protocol {
            ProtocolChoice::Gmw => ProtocolChoice::Gmw,
            _ => ProtocolChoice::Yao,
        };
        device.resolve(yao_unless_gmw, level, sequential)?;
    }
    Ok(())
}

/// Where the peer's connections come from: accepted on our listener, or opened to its
/// address (the worker streams of parallel modes follow the main connection).
#[derive(Clone, Copy)]
pub enum Endpoint<'a> {
    Listening(&'a pgc_net::TcpListenerHandle),
    Connected(&'a str),
}

/// Everything one party's protocol run needs apart from the connection, prepared once (and
/// reused for every run under `pgc run --serve`).
pub struct PartySession {
    pub me: Party,
    pub program: circuits::Program,
    /// The circuit as phases and regions when a parallel mode runs it.
    pub parallel: Option<ParallelCircuit>,
    pub owners: Vec<Party>,
    pub visibility: Vec<Visibility>,
    /// This party's input values, in circuit order.
    pub inputs: Vec<Vec<bool>>,
    pub level: Security,
    pub protocol: ProtocolChoice,
    pub config: ParallelConfig,
    pub security: pgc_net::connect::ChannelSecurity,
    pub notes: pgc_net::connect::RefusalNotes,
    pub link: Option<SharedLink>,
    pub bit_order: pgc_circuit::BitOrder,
    pub timeout: Duration,
    pub quiet: bool,
    /// `--device`, resolved per run (the protocol may be chosen at the handshake).
    pub device: DeviceArg,
    /// `--garbling`: how semi-honest Yao garbles its AND gates.
    pub garbling: pgc_protocol::Garbling,
}

impl PartySession {
    /// One run of the protocol over the connected main channel `ch`.
    pub fn run(
        &self,
        mut ch: pgc_net::connect::PeerChannel,
        endpoint: Endpoint,
    ) -> Result<Outcome> {
        let me = self.me;
        let quiet = self.quiet;
        let circuit = &self.program.circuit;
        ch.set_timeout(Some(self.timeout))?;
        // From here on, a run in which nothing moves for `timeout` is ended.
        let dog = Watchdog::start(self.timeout);
        dog.watch_socket(ch.try_clone_socket().ok());
        let mut ch = dog.watch(ch.shaped(&self.link)?);
        if !quiet && let Some(l) = &self.link {
            eprintln!(
                "party {}: shaping what it sends to {}",
                me.letter(),
                l.shape()
            );
        }
        // How this party reads and prints values: compared with the peer's at the handshake,
        // so that both print the same result (same C types, same bit order).
        let value_format = match &self.program.interface {
            Some(iface) => ValueFormat::typed(iface),
            None => ValueFormat::Untyped(self.bit_order),
        };
        let (protocol, garbling) = match self.protocol {
            ProtocolChoice::Auto => {
                let described = WithValueFormat::new(circuit, value_format.clone());
                // Three-halves runs sequential semi-honest Yao on the CPU (auto is
                // semi-honest only).
                let may_three_halves = self.parallel.is_none() && self.device == DeviceArg::Cpu;
                let pick = dog.explain(
                    agree_on_protocol(
                        &mut ch,
                        &described,
                        &self.owners,
                        &self.visibility,
                        me,
                        &self.inputs,
                        &CostModel::default(),
                        may_three_halves,
                    )
                    .map_err(anyhow::Error::from),
                )?;
                if !quiet {
                    eprintln!(
                        "party {}: --protocol auto chose {}: {}",
                        me.letter(),
                        pick.protocol,
                        pick.why
                    );
                }
                (pick.protocol, pick.garbling)
            }
            p => (p, self.garbling),
        };
        let (device, device_note) =
            self.device
                .resolve(protocol, self.level, self.parallel.is_none())?;
        if !quiet && let Some(note) = device_note {
            eprintln!("party {}: {note}", me.letter());
        }
        let outcome = match &self.parallel {
            _ if protocol == ProtocolChoice::Gmw => {
                let mut progress = Progress::new(circuit.and_count(), quiet);
                let config = GmwConfig {
                    send_ahead_bytes: if self.link.is_some() {
                        pgc_protocol::local::SHAPED_SEND_AHEAD_BYTES
                    } else {
                        GmwConfig::default().send_ahead_bytes
                    },
                    ..GmwConfig::default()
                };
                // Under auto the program may also be held as phases and regions; GMW runs
                // the whole circuit as one gate stream (the same on both sides).
                let outcome = run_gmw(
                    &mut ch,
                    &WithValueFormat::new(circuit, value_format),
                    &self.owners,
                    &self.visibility,
                    me,
                    &self.inputs,
                    &config,
                    &mut |n| {
                        progress.set(n);
                        dog.set_ands(n);
                    },
                );
                progress.finish();
                outcome
            }
            None => {
                let mut progress = Progress::new(circuit.and_count(), quiet);
                let circuit = &WithValueFormat::new(circuit, value_format);
                // Semi-honest: the plain garbler or evaluator.
                let outcome = run_secured(
                    &mut ch,
                    circuit,
                    &self.owners,
                    &self.visibility,
                    me,
                    &self.inputs,
                    self.level,
                    RunOptions {
                        threads: self.config.threads,
                        device,
                        garbling,
                    },
                    &mut |n| {
                        progress.set(n);
                        dog.set_ands(n);
                    },
                );
                progress.finish();
                outcome
            }
            // Only at the semi-honest level (`level_and_config` makes the others sequential).
            Some(pc) => {
                let counter = dog.ands();
                let side = match endpoint {
                    Endpoint::Listening(listener) => Side::Accept(listener, &self.notes),
                    Endpoint::Connected(addr) => Side::Connect(addr.to_string()),
                };
                let mut opener = WatchedStreams {
                    side,
                    security: &self.security,
                    timeout: self.timeout,
                    link: self.link.clone(),
                    dog: &dog,
                };
                let extras = ParallelExtras {
                    value_format,
                    ..ParallelExtras::default()
                };
                crate::progress::watch(pc.and_count(), quiet, counter, || {
                    run_parallel_with(
                        me,
                        &mut ch,
                        &mut opener,
                        pc,
                        &self.owners,
                        &self.visibility,
                        &self.inputs,
                        &self.config,
                        counter,
                        &extras,
                    )
                })
            }
        };
        // The protocol checked both parties' gate streams before revealing any output.
        dog.explain(outcome.map_err(anyhow::Error::from))
    }
}

/// Input values one party (or, for `pgc local`'s `--inputs`, both) gives, from any of the
/// places the CLI and the Python package take them: `NAME=VALUE` texts (for a Bristol
/// circuit, bare values in circuit order), a JSON file, and a JSON object (Python
/// dictionaries arrive this way). Texts take precedence over the file and the object.
#[derive(Clone, Debug, Default)]
pub struct InputValues {
    pub assignments: Vec<String>,
    pub file: Option<PathBuf>,
    pub json: Option<Value>,
}

impl InputValues {
    /// Values given as `NAME=VALUE` texts (the CLI's `--input`, `--a`, `--b`).
    pub fn texts(assignments: &[String]) -> InputValues {
        InputValues {
            assignments: assignments.to_vec(),
            ..InputValues::default()
        }
    }

    /// Adds these values to `g` for the ports in `scope`; `flag` names where texts come from.
    fn gather(&self, g: &mut Gathered, scope: Scope, flag: &str, flag_for: FlagFor) -> Result<()> {
        g.add_assignments(&self.assignments, scope, flag, flag_for)?;
        if let Some(file) = &self.file {
            g.add_file(file, scope, flag_for)?;
        }
        if let Some(json) = &self.json {
            g.add_json(json, scope, flag, flag_for)?;
        }
        Ok(())
    }
}

/// What a party's run needs besides the connection, as `pgc run` takes it.
pub struct PartyOptions<'a> {
    pub circuit: &'a CircuitArgs,
    /// The program, if the caller has loaded it already (`None`: load `circuit`).
    pub loaded: Option<&'a circuits::Program>,
    pub party: Party,
    pub inputs: &'a InputValues,
    /// The flag (or argument) the inputs come from, for errors: `--input` on the CLI.
    pub input_flag: &'static str,
    pub security: &'a SecurityArgs,
    pub level: &'a LevelArgs,
    pub protocol: &'a ProtocolChoiceArgs,
    pub p: &'a ProtocolArgs,
}

/// How this party's lines on stderr begin.
fn party_prefix(party: Party) -> &'static str {
    match party {
        Party::A => "party A: ",
        Party::B => "party B: ",
    }
}

impl PartySession {
    /// Checks the options, loads the program (compiling it if needed) and gathers this
    /// party's inputs: everything a run does before it connects. Notes go to stderr unless
    /// `--quiet` or `--json`.
    pub fn prepare(o: &PartyOptions) -> Result<PartySession> {
        // Before anything else, so a missing flag costs no compile and no connection.
        let security = crate::security::resolve(o.security)?;
        if !o.p.quiet {
            for note in crate::security::loose_permission_notes(o.security) {
                eprintln!("{}note: {note}", party_prefix(o.party));
            }
        }
        let (level, protocol, mut config) = o.p.level_and_config(o.level, o.protocol, false)?;
        let timeout = o.p.timeout()?;
        let quiet = o.p.quiet || o.p.json;
        let shape = o.p.link_shape()?;
        let me = o.party;
        let who = party_prefix(me);
        let (program, auto_note) = load_for_protocol(
            o.circuit,
            &mut config,
            o.p.threads.is_some(),
            false,
            quiet,
            who,
            o.loaded,
        )?;
        let parallel = parallel_form(&program, &config)?;
        circuits::check_label_memory(&program, parallel.as_ref())?;
        let layout: Layout = program.circuit.layout().clone();
        let (owners, visibility) = roles(program.interface.as_ref(), &layout, o.p)?;
        check_outputs_for_level(level, &visibility, program.interface.as_ref())?;
        let inputs = gather_inputs(
            &program,
            o.circuit,
            o.inputs,
            Some(me),
            o.input_flag,
            o.p.inputs_of_a.as_deref(),
        );
        // Bristol values have no names: say that each party gives only its own.
        let inputs = match program.interface {
            Some(_) => inputs?,
            None => inputs.with_context(|| {
                format!(
                    "each party gives only its own input values with {}",
                    o.input_flag
                )
            })?,
        };
        if let Some(note) = auto_note {
            eprintln!("{note}");
        }
        let notes = crate::security::stderr_notes(me.letter(), !o.p.quiet);
        check_gpu_early(o.p.device, protocol, level, parallel.is_none())?;
        Ok(PartySession {
            me,
            program,
            parallel,
            owners,
            visibility,
            inputs,
            level,
            protocol,
            config,
            security,
            notes,
            link: (!shape.is_none()).then(|| SharedLink::new(shape)),
            bit_order: o.circuit.bit_order(),
            timeout,
            quiet,
            device: o.p.device_for_garbling(),
            garbling: o.p.garbling.garbling(),
        })
    }

    /// Says on stderr how the connection is protected, the security level and the protocol
    /// (unless quiet).
    pub fn describe_on_stderr(&self) {
        if self.quiet {
            return;
        }
        let me = self.me.letter();
        eprintln!(
            "party {me}: connection: {}",
            crate::security::describe(&self.security)
        );
        eprintln!(
            "party {me}: security level: {}",
            crate::level::describe(self.level)
        );
        if self.protocol != ProtocolChoice::Yao {
            eprintln!(
                "party {me}: protocol: {}",
                crate::protocol_arg::describe(self.protocol)
            );
        }
        if self.garbling == pgc_protocol::Garbling::ThreeHalves {
            eprintln!(
                "party {me}: garbling: three-halves (1.5κ + 5 bits per AND gate, one thread)"
            );
        }
    }

    /// Waits on `listener` for the peer, which must prove the key this party pinned.
    pub fn accept(&self, listener: &TcpListenerHandle) -> Result<PeerChannel> {
        if !self.quiet {
            eprintln!(
                "party {}: waiting for the peer on {}",
                self.me.letter(),
                listener.local_addr()
            );
        }
        Ok(accept_peer(
            listener,
            &self.security,
            self.timeout,
            &self.notes,
        )?)
    }

    /// Connects to the peer at `addr` (retried until the timeout).
    pub fn connect(&self, addr: &str) -> Result<PeerChannel> {
        Ok(connect_peer_noting(
            addr,
            &self.security,
            self.timeout,
            &self.notes,
        )?)
    }

    /// One whole run: listens on `listen` or connects to `connect` (exactly one), then runs.
    pub fn listen_or_connect(
        &self,
        listen: Option<&str>,
        connect: Option<&str>,
    ) -> Result<Outcome> {
        match (listen, connect) {
            (Some(addr), None) => {
                let listener = TcpChannel::listen(addr)?;
                let ch = self.accept(&listener)?;
                self.run(ch, Endpoint::Listening(&listener))
            }
            (None, Some(addr)) => {
                let ch = self.connect(addr)?;
                self.run(ch, Endpoint::Connected(addr))
            }
            _ => bail!("give exactly one of listen (wait for the peer) and connect (to the peer)"),
        }
    }
}

/// The values `values` gives for `party`'s inputs (`None`: every input), in circuit order,
/// checked against the program's C types (compiled programs) or value widths (Bristol
/// circuits, whose owners `inputs_of_a` says as `--inputs-of-a` does). `flag` names where
/// the values come from, for errors.
pub fn gather_inputs(
    program: &circuits::Program,
    circuit: &CircuitArgs,
    values: &InputValues,
    party: Option<Party>,
    flag: &'static str,
    inputs_of_a: Option<&[usize]>,
) -> Result<Vec<Vec<bool>>> {
    let scope = party.map_or(Scope::All, Scope::Party);
    match &program.interface {
        Some(iface) => {
            circuit.check_typed()?;
            let flag_for = move |_: Owner| flag;
            let mut g = Gathered::new(iface);
            values.gather(&mut g, scope, flag, &flag_for)?;
            g.finish(scope, &flag_for)
        }
        None => {
            refuse_named_values(values)?;
            let layout = program.circuit.layout();
            let owners = circuits::owners(layout, inputs_of_a)?;
            let widths = match party {
                Some(p) => widths_of(&owners, layout, p),
                None => layout.input_widths.clone(),
            };
            let who = party.map_or(flag.to_string(), |p| format!("party {}", p.letter()));
            circuits::parse_values(&values.assignments, &widths, circuit.bit_order(), &who)
        }
    }
}

/// The widths of the input values `party` owns, in circuit order.
fn widths_of(owners: &[Party], layout: &Layout, party: Party) -> Vec<u32> {
    owners
        .iter()
        .zip(&layout.input_widths)
        .filter(|(o, _)| **o == party)
        .map(|(_, &w)| w)
        .collect()
}

fn refuse_named_values(values: &InputValues) -> Result<()> {
    if values.json.is_some() {
        bail!(
            "values by name need a compiled program (.c, .v or .pgc) whose inputs have names; \
             give a Bristol circuit's values in order"
        );
    }
    refuse_inputs_file(&values.file)
}

/// What `pgc local` runs: both parties in this process, over loopback TCP.
pub struct LocalOptions<'a> {
    pub circuit: &'a CircuitArgs,
    /// The program, if the caller has loaded it already (`None`: load `circuit`).
    pub loaded: Option<&'a circuits::Program>,
    /// Party A's inputs and party B's; `both` holds values of either (`--inputs FILE`).
    pub a: &'a InputValues,
    pub b: &'a InputValues,
    pub both: &'a InputValues,
    /// How errors name where A's and B's values come from (`--a`, `--b` on the CLI).
    pub flags: (&'static str, &'static str),
    pub insecure_plaintext: bool,
    pub level: &'a LevelArgs,
    pub protocol: &'a ProtocolChoiceArgs,
    pub p: &'a ProtocolArgs,
}

/// What a local run found: every output (each decoded by a party allowed to see it), both
/// parties' statistics, and what ran.
pub struct LocalOutcome {
    pub interface: Option<Interface>,
    pub outputs: Vec<Option<Vec<bool>>>,
    pub a: RunStats,
    pub b: RunStats,
    pub level: Security,
    pub protocol: ProtocolChoice,
    pub bit_order: pgc_circuit::BitOrder,
}

/// Runs both parties in this process (`pgc local`, `pgc.local`).
pub fn run_local(o: &LocalOptions) -> Result<LocalOutcome> {
    let (level, protocol, mut config) = o.p.level_and_config(o.level, o.protocol, true)?;
    let timeout = o.p.timeout()?;
    let quiet = o.p.quiet || o.p.json;
    let shape = o.p.link_shape()?;
    let (program, auto_note) = load_for_protocol(
        o.circuit,
        &mut config,
        o.p.threads.is_some(),
        true,
        quiet,
        "",
        o.loaded,
    )?;
    let parallel = parallel_form(&program, &config)?;
    circuits::check_label_memory(&program, parallel.as_ref())?;
    check_gpu_early(o.p.device, protocol, level, parallel.is_none())?;
    let circuit = &program.circuit;
    let layout: Layout = circuit.layout().clone();
    let (owners, visibility) = roles(program.interface.as_ref(), &layout, o.p)?;
    check_outputs_for_level(level, &visibility, program.interface.as_ref())?;
    let (flag_a, flag_b) = o.flags;
    let (a, b) = match &program.interface {
        Some(iface) => {
            o.circuit.check_typed()?;
            let flag_for = move |owner: Owner| match owner {
                Owner::A => flag_a,
                Owner::B => flag_b,
            };
            let mut g = Gathered::new(iface);
            o.a.gather(&mut g, Scope::Party(Party::A), flag_a, &flag_for)?;
            o.b.gather(&mut g, Scope::Party(Party::B), flag_b, &flag_for)?;
            o.both.gather(&mut g, Scope::All, "--inputs", &flag_for)?;
            let a = g.finish(Scope::Party(Party::A), &flag_for);
            let b = g.finish(Scope::Party(Party::B), &flag_for);
            match (a, b) {
                (Ok(a), Ok(b)) => (a, b),
                (Err(ea), Err(eb)) => bail!("{ea}\n       {eb}"),
                (Err(e), _) | (_, Err(e)) => return Err(e),
            }
        }
        None => {
            for values in [o.a, o.b, o.both] {
                refuse_named_values(values)?;
            }
            let order = o.circuit.bit_order();
            (
                circuits::parse_values(
                    &o.a.assignments,
                    &widths_of(&owners, &layout, Party::A),
                    order,
                    &format!("party A ({flag_a})"),
                )?,
                circuits::parse_values(
                    &o.b.assignments,
                    &widths_of(&owners, &layout, Party::B),
                    order,
                    &format!("party B ({flag_b})"),
                )?,
            )
        }
    };
    if let Some(note) = auto_note {
        eprintln!("{note}");
    }
    let security = if o.insecure_plaintext {
        LocalSecurity::Plaintext
    } else {
        LocalSecurity::Tls
    };
    let (protocol, garbling) = match protocol {
        ProtocolChoice::Auto => {
            let may_three_halves = parallel.is_none() && o.p.device == DeviceArg::Cpu;
            let pick =
                crate::protocol_arg::decide_local(circuit_shape(circuit), shape, may_three_halves);
            if !quiet {
                eprintln!("--protocol auto chose {}: {}", pick.protocol, pick.why);
            }
            (pick.protocol, pick.garbling)
        }
        p => (p, o.p.garbling.garbling()),
    };
    let (device, device_note) =
        o.p.device_for_garbling()
            .resolve(protocol, level, parallel.is_none())?;
    if !quiet && let Some(note) = device_note {
        eprintln!("{note} (both parties)");
    }
    let result = match &parallel {
        _ if protocol == ProtocolChoice::Gmw => {
            let mut progress = Progress::new(circuit.and_count(), quiet);
            // Under auto the program may also be held as phases and regions; GMW runs the
            // whole circuit as one gate stream (the same on both sides).
            let r = run_local_gmw(
                circuit,
                &owners,
                &visibility,
                &a,
                &b,
                &GmwConfig::default(),
                shape,
                timeout,
                security,
                &mut |n| progress.set(n),
            );
            progress.finish();
            r
        }
        None => {
            let mut progress = Progress::new(circuit.and_count(), quiet);
            let options = LocalTcpOptions {
                timeout,
                channel: security,
                level,
                threads: config.threads,
                garbling,
                devices: [device; 2],
                shape,
            };
            let r = run_local_tcp_with(circuit, &owners, &visibility, &a, &b, options, &mut |n| {
                progress.set(n)
            });
            progress.finish();
            r
        }
        Some(pc) => {
            let counter = AtomicU64::new(0);
            crate::progress::watch(pc.and_count(), quiet, &counter, || {
                run_local_parallel_secured(
                    pc,
                    &owners,
                    &visibility,
                    &a,
                    &b,
                    &config,
                    shape,
                    timeout,
                    security,
                    &counter,
                )
            })
        }
    };
    // The protocol checked both parties' gate streams before revealing any output.
    let (oa, ob) = result?;
    // Both parties run here: every output, each as the party allowed to see it decoded it,
    // after checking that outputs seen by both agree.
    let mut outputs = Vec::with_capacity(visibility.len());
    for (j, v) in visibility.iter().enumerate() {
        let (from_a, from_b) = (&oa.outputs[j], &ob.outputs[j]);
        if *v == Visibility::Both && from_a != from_b {
            bail!("the two parties decoded different outputs; this is a bug in pgc");
        }
        outputs.push(from_a.clone().or_else(|| from_b.clone()));
    }
    Ok(LocalOutcome {
        interface: program.interface.clone(),
        outputs,
        a: oa.stats,
        b: ob.stats,
        level,
        protocol,
        bit_order: o.circuit.bit_order(),
    })
}

/// Evaluates `program` in the clear on every input (`pgc eval`, `Circuit.eval`): a check of
/// what the circuit computes, with no protocol and no privacy. `inputs`: values, whose
/// inputs they may name, and where they come from (for errors); a Bristol circuit's values
/// are taken in that order. Returns every output value.
pub fn eval_clear(
    program: &circuits::Program,
    circuit: &CircuitArgs,
    inputs: &[(&InputValues, Scope, &'static str)],
) -> Result<Vec<Vec<bool>>> {
    let layout = program.circuit.layout().clone();
    // Before the inputs are parsed too: their bits are part of what is measured.
    pgc_circuit::eval::memory_needed(&layout).check()?;
    let values = match &program.interface {
        Some(iface) => {
            circuit.check_typed()?;
            let mut g = Gathered::new(iface);
            let mut last_flag = "--input";
            for &(values, scope, flag) in inputs {
                let flag_for = move |_: Owner| flag;
                values.gather(&mut g, scope, flag, &flag_for)?;
                last_flag = flag;
            }
            let flag_for = move |_: Owner| last_flag;
            g.finish(Scope::All, &flag_for)?
        }
        None => {
            let mut texts = Vec::new();
            for &(values, _, _) in inputs {
                refuse_named_values(values)?;
                texts.extend(values.assignments.iter().cloned());
            }
            let flag = inputs.first().map_or("--input", |i| i.2);
            circuits::parse_values(&texts, &layout.input_widths, circuit.bit_order(), flag)?
        }
    };
    let bits: Vec<bool> = values.into_iter().flatten().collect();
    let out = pgc_circuit::eval::eval_bits_checked(&program.circuit, &bits)?;
    program.check_stream()?;
    Ok(pgc_circuit::value::decode_outputs(&layout, &out))
}
