//! Test support: the check that a secret block (or a bit string) never appears in what a
//! party sent (recorded by a [`pgc_net::RecordingChannel`]).

use pgc_crypto::Block;

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

/// `secret` appears nowhere in `sent`: not as itself, its complement, nor with its lowest
/// bit cleared, each little- and big-endian, at any offset.
pub(crate) fn assert_block_absent(sent: &[u8], secret: Block, what: &str) {
    assert!(
        sent.len() > 1000,
        "a real transcript ({} bytes)",
        sent.len()
    );
    for x in [secret.0, !secret.0, secret.0 & !1, !(secret.0 & !1)] {
        for bytes in [x.to_le_bytes(), x.to_be_bytes()] {
            assert!(!contains(sent, &bytes), "{what} appears in the transcript");
        }
    }
}

/// The bits (at least 64), packed lsb-first or msb-first, or their complement, appear
/// nowhere in `sent`.
pub(crate) fn assert_bits_absent(sent: &[u8], bits: &[bool], what: &str) {
    assert!(
        bits.len() >= 64,
        "enough bits that a chance match is negligible"
    );
    let lsb: Vec<u8> = bits
        .chunks(8)
        .map(|c| {
            c.iter()
                .enumerate()
                .fold(0u8, |b, (i, &x)| b | (x as u8) << i)
        })
        .collect();
    let msb: Vec<u8> = bits
        .chunks(8)
        .map(|c| c.iter().fold(0u8, |b, &x| b << 1 | x as u8))
        .collect();
    for p in [&lsb, &msb] {
        let not: Vec<u8> = p.iter().map(|b| !b).collect();
        assert!(!contains(sent, p), "{what} appear in the clear");
        assert!(!contains(sent, &not), "{what} appear complemented");
    }
}
