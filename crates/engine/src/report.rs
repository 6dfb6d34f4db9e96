//! How results and statistics are shown: plain text for people, JSON for programs.

use pgc_circuit::value::{BitOrder, format_value};
use pgc_protocol::RunStats;
use serde_json::{Value, json};

pub fn outputs_hex(outputs: &[Vec<bool>], order: BitOrder) -> Vec<String> {
    outputs
        .iter()
        .map(|bits| format_value(bits, order))
        .collect()
}

pub fn stats_json(s: &RunStats) -> Value {
    let mut v = stats_json_common(s);
    if let Some(g) = &s.gmw {
        v["protocol"] = json!("gmw");
        v["gmw"] = json!({
            "setup_seconds": g.setup_seconds,
            "online_seconds": g.online_seconds,
            "rounds": g.rounds,
            "triples": g.triples,
            "setup_bytes_sent": g.setup_bytes_sent,
            "setup_bytes_received": g.setup_bytes_received,
            "online_and_per_sec": rate(s.and_gates, g.online_seconds),
        });
    } else {
        v["protocol"] = json!("yao");
    }
    v
}

fn stats_json_common(s: &RunStats) -> Value {
    json!({
        "gates": s.gates,
        "and_gates": s.and_gates,
        "seconds": s.seconds,
        "input_seconds": s.input_seconds,
        "circuit_seconds": s.circuit_seconds,
        "and_per_sec": rate(s.and_gates, s.circuit_seconds),
        "bytes_sent": s.bytes_sent,
        "bytes_received": s.bytes_received,
    })
}

/// One line for people: what was computed, how fast, how many bytes.
pub fn stats_line(who: &str, s: &RunStats) -> String {
    if let Some(g) = &s.gmw {
        return format!(
            "{who}: {} AND gates in {:.3} s: setup {:.3} s ({} triples, sent {}), online {:.3} s \
             ({} rounds, {}), sent {}, received {}",
            group(s.and_gates),
            s.seconds,
            g.setup_seconds,
            group(g.triples),
            bytes(g.setup_bytes_sent),
            g.online_seconds,
            group(g.rounds),
            per_sec(rate(s.and_gates, g.online_seconds), "AND/s"),
            bytes(s.bytes_sent),
            bytes(s.bytes_received)
        );
    }
    format!(
        "{who}: {} AND gates in {:.3} s (inputs and OT {:.3} s, circuit {:.3} s, {}), sent {}, received {}",
        group(s.and_gates),
        s.seconds,
        s.input_seconds,
        s.circuit_seconds,
        per_sec(rate(s.and_gates, s.circuit_seconds), "AND/s"),
        bytes(s.bytes_sent),
        bytes(s.bytes_received)
    )
}

pub fn rate(n: u64, seconds: f64) -> f64 {
    if seconds > 0.0 {
        n as f64 / seconds
    } else {
        0.0
    }
}

pub fn per_sec(r: f64, unit: &str) -> String {
    if r >= 1e6 {
        format!("{:.1} M {unit}", r / 1e6)
    } else if r >= 1e3 {
        format!("{:.1} K {unit}", r / 1e3)
    } else {
        format!("{r:.0} {unit}")
    }
}

pub fn bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = n as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{n} B")
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

/// 1234567 -> "1,234,567".
pub use pgc_circuit::limits::group_digits as group;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formatting() {
        assert_eq!(group(1234567), "1,234,567");
        assert_eq!(group(12), "12");
        assert_eq!(bytes(512), "512 B");
        assert_eq!(bytes(1536), "1.5 KiB");
        assert_eq!(per_sec(2.5e7, "AND/s"), "25.0 M AND/s");
    }
}
