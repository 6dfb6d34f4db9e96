//! Small dependency-free SVG charts for the `pgc bench` experiments: line charts (speed-up
//! or efficiency against threads or width, optionally on a log2 x axis, with dashed
//! reference lines) and distribution charts (a stepped violin of power-of-two buckets with
//! a box plot on top, on a log10 y axis) for AND-level widths.
//!
//! The output is plain SVG 1.1 with a `viewBox`, so it scales in a browser and in documents.

use std::fmt::Write as _;

/// Canvas size in SVG user units.
const WIDTH: f64 = 760.0;
const HEIGHT: f64 = 460.0;
/// Space around the plot area: tick labels and axis titles on the left and bottom, the
/// title on top, the legend on the right.
const LEFT: f64 = 72.0;
const RIGHT_LEGEND: f64 = 200.0;
const RIGHT_PLAIN: f64 = 28.0;
const TOP: f64 = 74.0;
const BOTTOM: f64 = 62.0;

/// Colour-blind friendly palette (Okabe–Ito), then a few more.
const PALETTE: [&str; 10] = [
    "#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#8C564B",
    "#7F7F7F", "#BCBD22",
];

/// One line of a [`LineChart`].
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
    /// Drawn dashed in gray without markers: a reference such as ideal speed-up.
    pub reference: bool,
}

impl Series {
    pub fn new(name: impl Into<String>, points: Vec<(f64, f64)>) -> Series {
        Series {
            name: name.into(),
            points,
            reference: false,
        }
    }

    /// A dashed reference line (e.g. "ideal").
    pub fn reference(name: impl Into<String>, points: Vec<(f64, f64)>) -> Series {
        Series {
            reference: true,
            ..Series::new(name, points)
        }
    }
}

/// A line chart with a legend.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LineChart {
    pub title: String,
    /// A smaller gray line under the title (machine, caveats).
    pub subtitle: String,
    pub x_label: String,
    pub y_label: String,
    /// Logarithmic x axis with ticks at powers of two.
    pub log2_x: bool,
    /// Start the y axis at 0 even when all values are larger.
    pub y_from_zero: bool,
    /// The y axis reaches at least this value (e.g. 1 for efficiency), whatever the data.
    pub y_at_least: f64,
    /// Ticks of a linear x axis at exactly these values (e.g. the thread counts measured),
    /// the axis spanning them; empty: round steps chosen from the data.
    pub x_ticks: Vec<f64>,
    pub series: Vec<Series>,
}

/// One box of a [`DistributionChart`].
#[derive(Clone, Debug, PartialEq)]
pub struct Distribution {
    pub name: String,
    /// Positive values (others are left out: the y axis is logarithmic).
    pub values: Vec<f64>,
}

/// Distributions side by side on a log10 y axis: for each, a stepped violin (how many
/// values fall in each power-of-two bucket, as width) and a box plot (quartiles, median,
/// whiskers at min and max).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DistributionChart {
    pub title: String,
    pub subtitle: String,
    pub y_label: String,
    pub groups: Vec<Distribution>,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Scale {
    Linear,
    /// Logarithmic with this base (ticks at its powers).
    Log(f64),
}

/// Maps data values in `lo..=hi` to pixels in `px_lo..=px_hi` (for a y axis `px_lo` is the
/// bottom, the larger pixel coordinate).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Axis {
    scale: Scale,
    lo: f64,
    hi: f64,
    px_lo: f64,
    px_hi: f64,
    /// Tick step of a linear axis (for labels, with `fixed`).
    step: f64,
    /// Explicit tick values, if any.
    fixed: Vec<f64>,
}

impl Axis {
    /// A linear axis whose range covers `min..=max` with round tick steps (1, 2 or 5 times
    /// a power of ten); `from_zero` pulls the lower end to 0 for positive data.
    pub(crate) fn linear(min: f64, max: f64, from_zero: bool, px_lo: f64, px_hi: f64) -> Axis {
        let (mut min, mut max) = finite_or(min, max, (0.0, 1.0));
        if from_zero && min > 0.0 {
            min = 0.0;
        }
        if max <= min {
            // One value: show it in the middle of a unit range.
            let pad = if min == 0.0 { 1.0 } else { min.abs() * 0.5 };
            min -= pad;
            max += pad;
            if from_zero && min < 0.0 && min + pad >= 0.0 {
                min = 0.0;
            }
        }
        let step = nice_step((max - min) / 6.0);
        Axis {
            scale: Scale::Linear,
            lo: (min / step).floor() * step,
            hi: (max / step).ceil() * step,
            px_lo,
            px_hi,
            step,
            fixed: Vec::new(),
        }
    }

    /// A linear axis from the smallest to the largest of `ticks` (and of `min..=max`), with
    /// ticks exactly at `ticks`.
    pub(crate) fn fixed(ticks: &[f64], min: f64, max: f64, px_lo: f64, px_hi: f64) -> Axis {
        let mut ticks: Vec<f64> = ticks.iter().copied().filter(|v| v.is_finite()).collect();
        ticks.sort_by(f64::total_cmp);
        ticks.dedup();
        let lo = ticks
            .first()
            .copied()
            .unwrap_or(0.0)
            .min(if min.is_finite() { min } else { f64::INFINITY });
        let hi = ticks
            .last()
            .copied()
            .unwrap_or(1.0)
            .max(if max.is_finite() {
                max
            } else {
                f64::NEG_INFINITY
            });
        let hi = if hi > lo { hi } else { lo + 1.0 };
        let integral = ticks.iter().all(|v| (v - v.round()).abs() < 1e-9);
        Axis {
            scale: Scale::Linear,
            lo,
            hi,
            px_lo,
            px_hi,
            step: if integral {
                1.0
            } else {
                nice_step((hi - lo) / 5.0) / 10.0
            },
            fixed: ticks,
        }
    }

    /// A logarithmic axis from the power of `base` at or below `min` to the one at or above
    /// `max` (both must be positive; anything else gives 1..base).
    pub(crate) fn log(min: f64, max: f64, base: f64, px_lo: f64, px_hi: f64) -> Axis {
        let (min, max) = if min > 0.0 && max >= min && max.is_finite() {
            (min, max)
        } else {
            (1.0, base)
        };
        let mut lo_exp = min.log(base).floor();
        let mut hi_exp = max.log(base).ceil();
        // Rounding can put an exact power just outside its own exponent.
        if base.powf(lo_exp + 1.0) <= min * (1.0 + 1e-9) {
            lo_exp += 1.0;
        }
        if base.powf(hi_exp - 1.0) >= max * (1.0 - 1e-9) {
            hi_exp -= 1.0;
        }
        if hi_exp <= lo_exp {
            hi_exp = lo_exp + 1.0;
        }
        Axis {
            scale: Scale::Log(base),
            lo: base.powf(lo_exp),
            hi: base.powf(hi_exp),
            px_lo,
            px_hi,
            step: 0.0,
            fixed: Vec::new(),
        }
    }

    fn transform(&self, v: f64) -> f64 {
        match self.scale {
            Scale::Linear => v,
            Scale::Log(base) => v.log(base),
        }
    }

    /// The pixel coordinate of data value `v`.
    pub(crate) fn map(&self, v: f64) -> f64 {
        let (a, b) = (self.transform(self.lo), self.transform(self.hi));
        self.px_lo + (self.transform(v) - a) / (b - a) * (self.px_hi - self.px_lo)
    }

    /// Values at which to draw ticks and grid lines.
    pub(crate) fn ticks(&self) -> Vec<f64> {
        if !self.fixed.is_empty() {
            return self.fixed.clone();
        }
        match self.scale {
            Scale::Linear => {
                let n = ((self.hi - self.lo) / self.step).round() as i64;
                (0..=n).map(|k| self.lo + k as f64 * self.step).collect()
            }
            Scale::Log(base) => {
                let (a, b) = (self.lo.log(base).round(), self.hi.log(base).round());
                let n = (b - a) as i64;
                // At most ~12 labelled ticks: skip exponents on long ranges.
                let stride = (n / 12 + 1).max(1);
                (0..=n)
                    .step_by(stride as usize)
                    .map(|k| base.powf(a + k as f64))
                    .collect()
            }
        }
    }

    fn label(&self, v: f64) -> String {
        match self.scale {
            Scale::Linear => {
                let decimals = (-self.step.log10().floor()).max(0.0) as usize;
                let v = if v.abs() < self.step * 1e-9 { 0.0 } else { v };
                format!("{v:.decimals$}")
            }
            // Powers of two read best in full (1024, 4096); long ones compactly.
            Scale::Log(base) if base == 2.0 && v < 1e5 => format!("{}", v.round()),
            Scale::Log(_) => compact(v),
        }
    }

    fn contains(&self, v: f64) -> bool {
        let (lo, hi) = (self.lo.min(self.hi), self.lo.max(self.hi));
        v.is_finite()
            && v >= lo - (hi - lo).abs() * 1e-9
            && v <= hi + (hi - lo).abs() * 1e-9
            && (self.scale == Scale::Linear || v > 0.0)
    }
}

fn finite_or(min: f64, max: f64, default: (f64, f64)) -> (f64, f64) {
    if min.is_finite() && max.is_finite() && min <= max {
        (min, max)
    } else {
        default
    }
}

/// 1, 2 or 5 times a power of ten, at least `raw`.
fn nice_step(raw: f64) -> f64 {
    if raw.is_nan() || raw <= 0.0 || raw.is_infinite() {
        return 1.0;
    }
    let power = 10f64.powf(raw.log10().floor());
    let f = raw / power;
    let m = if f <= 1.0 {
        1.0
    } else if f <= 2.0 {
        2.0
    } else if f <= 5.0 {
        5.0
    } else {
        10.0
    };
    m * power
}

/// 1, 10, 100, 1k, 10k, 1M, ...; 0.5 for fractions.
fn compact(v: f64) -> String {
    let units = [(1e9, "G"), (1e6, "M"), (1e3, "k")];
    for (size, unit) in units {
        if v >= size {
            let x = v / size;
            return if (x - x.round()).abs() < 1e-9 {
                format!("{}{unit}", x.round())
            } else {
                format!("{x:.1}{unit}")
            };
        }
    }
    if (v - v.round()).abs() < 1e-9 {
        format!("{}", v.round())
    } else {
        format!("{v:.2}")
    }
}

/// Escapes text for SVG content and attribute values.
fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c => out.push(c),
        }
    }
    out
}

/// The `q`-quantile (0..=1) of sorted values, interpolating linearly between ranks;
/// `None` when empty.
pub fn quantile(sorted: &[f64], q: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let pos = q.clamp(0.0, 1.0) * (sorted.len() - 1) as f64;
    let (i, frac) = (pos.floor() as usize, pos.fract());
    let next = sorted[(i + 1).min(sorted.len() - 1)];
    Some(sorted[i] + (next - sorted[i]) * frac)
}

/// Characters of subtitle per line (11.5-unit text across the canvas).
const SUBTITLE_CHARS: usize = 118;

/// Splits `text` into lines of at most `max` characters at spaces (a longer word stays
/// whole).
fn wrap(text: &str, max: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        if !line.is_empty() && line.chars().count() + 1 + word.chars().count() > max {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() {
        lines.push(line);
    }
    lines
}

/// The opening of a document: canvas, background, title and subtitle.
fn open(svg: &mut String, title: &str, subtitle: &str) {
    let _ = writeln!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {HEIGHT}" width="{WIDTH}" height="{HEIGHT}" font-family="Helvetica, Arial, sans-serif">"#
    );
    let _ = writeln!(
        svg,
        r##"<rect x="0" y="0" width="{WIDTH}" height="{HEIGHT}" fill="#ffffff"/>"##
    );
    let _ = writeln!(
        svg,
        r##"<text x="{:.1}" y="26" font-size="17" font-weight="bold" text-anchor="middle" fill="#222222">{}</text>"##,
        WIDTH / 2.0,
        escape(title)
    );
    for (k, line) in wrap(subtitle, SUBTITLE_CHARS).iter().take(2).enumerate() {
        let _ = writeln!(
            svg,
            r##"<text x="{:.1}" y="{}" font-size="11.5" text-anchor="middle" fill="#666666">{}</text>"##,
            WIDTH / 2.0,
            45 + 14 * k,
            escape(line)
        );
    }
}

/// Grid lines, frame, ticks, tick labels and axis titles. `x_ticks` are (pixel, label).
fn frame(
    svg: &mut String,
    plot: (f64, f64, f64, f64),
    x_ticks: &[(f64, String)],
    y: &Axis,
    x_label: &str,
    y_label: &str,
) {
    let (left, top, right, bottom) = plot;
    let _ = writeln!(svg, r##"<g stroke="#e3e3e3" stroke-width="1">"##);
    for &(px, _) in x_ticks {
        let _ = writeln!(
            svg,
            r#"<line x1="{px:.1}" y1="{top:.1}" x2="{px:.1}" y2="{bottom:.1}"/>"#
        );
    }
    for v in y.ticks() {
        let py = y.map(v);
        let _ = writeln!(
            svg,
            r#"<line x1="{left:.1}" y1="{py:.1}" x2="{right:.1}" y2="{py:.1}"/>"#
        );
    }
    let _ = writeln!(svg, "</g>");
    let _ = writeln!(
        svg,
        r##"<rect x="{left:.1}" y="{top:.1}" width="{:.1}" height="{:.1}" fill="none" stroke="#444444" stroke-width="1"/>"##,
        right - left,
        bottom - top
    );
    let _ = writeln!(svg, r##"<g font-size="11.5" fill="#333333">"##);
    for (px, label) in x_ticks {
        let _ = writeln!(
            svg,
            r#"<text x="{px:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
            bottom + 17.0,
            escape(label)
        );
    }
    for v in y.ticks() {
        let _ = writeln!(
            svg,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"#,
            left - 7.0,
            y.map(v) + 4.0,
            escape(&y.label(v))
        );
    }
    let _ = writeln!(svg, "</g>");
    let _ = writeln!(
        svg,
        r##"<text x="{:.1}" y="{:.1}" font-size="13.5" text-anchor="middle" fill="#222222">{}</text>"##,
        (left + right) / 2.0,
        HEIGHT - 18.0,
        escape(x_label)
    );
    let mid = (top + bottom) / 2.0;
    let _ = writeln!(
        svg,
        r##"<text x="20" y="{mid:.1}" font-size="13.5" text-anchor="middle" fill="#222222" transform="rotate(-90 20 {mid:.1})">{}</text>"##,
        escape(y_label)
    );
}

impl LineChart {
    /// The x and y axes the points are drawn on.
    pub(crate) fn axes(&self) -> (Axis, Axis) {
        let right = WIDTH - RIGHT_LEGEND;
        let usable = |x: f64, y: f64| x.is_finite() && y.is_finite() && (!self.log2_x || x > 0.0);
        let measured = |s: &&Series| !s.reference && s.points.iter().any(|&(x, y)| usable(x, y));
        // Reference lines (ideal speed-up) do not stretch the y axis beyond the data, which
        // would flatten the measured lines; they are clipped to the plot instead.
        let has_data = self.series.iter().any(|s| measured(&s));
        let (mut x_min, mut x_max) = (f64::INFINITY, f64::NEG_INFINITY);
        let (mut y_min, mut y_max) = (f64::INFINITY, f64::NEG_INFINITY);
        for s in &self.series {
            for &(x, y) in s.points.iter().filter(|&&(x, y)| usable(x, y)) {
                x_min = x_min.min(x);
                x_max = x_max.max(x);
                if !has_data || !s.reference {
                    y_min = y_min.min(y);
                    y_max = y_max.max(y);
                }
            }
        }
        let x = if self.log2_x {
            Axis::log(x_min, x_max, 2.0, LEFT, right)
        } else if !self.x_ticks.is_empty() {
            Axis::fixed(&self.x_ticks, x_min, x_max, LEFT, right)
        } else {
            Axis::linear(x_min, x_max, false, LEFT, right)
        };
        // A little headroom so that a line at the top value stays clear of the frame.
        let top = if y_max.is_finite() {
            y_max.max(self.y_at_least)
        } else {
            y_max
        };
        let low = if self.y_from_zero {
            y_min.min(0.0)
        } else {
            y_min
        };
        let pad = if top > low { (top - low) * 0.04 } else { 0.0 };
        let y = Axis::linear(y_min, top + pad, self.y_from_zero, HEIGHT - BOTTOM, TOP);
        (x, y)
    }

    pub fn to_svg(&self) -> String {
        let (x, y) = self.axes();
        let (left, top, right, bottom) = (LEFT, TOP, WIDTH - RIGHT_LEGEND, HEIGHT - BOTTOM);
        let mut svg = String::new();
        open(&mut svg, &self.title, &self.subtitle);
        let x_ticks: Vec<(f64, String)> = x
            .ticks()
            .into_iter()
            .map(|v| (x.map(v), x.label(v)))
            .collect();
        frame(
            &mut svg,
            (left, top, right, bottom),
            &x_ticks,
            &y,
            &self.x_label,
            &self.y_label,
        );
        let _ = writeln!(
            svg,
            r#"<clipPath id="plot-area"><rect x="{left:.1}" y="{top:.1}" width="{:.1}" height="{:.1}"/></clipPath>"#,
            right - left,
            bottom - top
        );
        let mut colour = 0;
        let mut legend = Vec::new();
        for s in &self.series {
            let pts: Vec<(f64, f64)> = s
                .points
                .iter()
                .copied()
                .filter(|&(px, py)| {
                    x.contains(px) && (s.reference || y.contains(py)) && py.is_finite()
                })
                .map(|(px, py)| (x.map(px), y.map(py)))
                .collect();
            let (stroke, dash) = if s.reference {
                ("#888888", r#" stroke-dasharray="7 5""#)
            } else {
                colour += 1;
                (PALETTE[(colour - 1) % PALETTE.len()], "")
            };
            let _ = writeln!(svg, r#"<g clip-path="url(#plot-area)">"#);
            let _ = writeln!(svg, "<title>{}</title>", escape(&s.name));
            let list: Vec<String> = pts.iter().map(|(a, b)| format!("{a:.1},{b:.1}")).collect();
            if pts.len() > 1 {
                let _ = writeln!(
                    svg,
                    r#"<polyline fill="none" stroke="{stroke}" stroke-width="2.2" stroke-linejoin="round"{dash} points="{}"/>"#,
                    list.join(" ")
                );
            }
            if !s.reference {
                for (a, b) in &pts {
                    let _ = writeln!(
                        svg,
                        r##"<circle cx="{a:.1}" cy="{b:.1}" r="3.6" fill="{stroke}" stroke="#ffffff" stroke-width="1"/>"##
                    );
                }
            }
            let _ = writeln!(svg, "</g>");
            legend.push((s.name.as_str(), stroke, dash));
        }
        // The legend, right of the plot.
        let lx = right + 18.0;
        let _ = writeln!(svg, r##"<g font-size="12.5" fill="#222222">"##);
        for (k, (name, stroke, dash)) in legend.iter().enumerate() {
            let ly = top + 10.0 + k as f64 * 22.0;
            let _ = writeln!(
                svg,
                r#"<line x1="{lx:.1}" y1="{ly:.1}" x2="{:.1}" y2="{ly:.1}" stroke="{stroke}" stroke-width="2.2"{dash}/>"#,
                lx + 26.0
            );
            if dash.is_empty() {
                let _ = writeln!(
                    svg,
                    r#"<circle cx="{:.1}" cy="{ly:.1}" r="3.6" fill="{stroke}"/>"#,
                    lx + 13.0
                );
            }
            let _ = writeln!(
                svg,
                r#"<text x="{:.1}" y="{:.1}">{}</text>"#,
                lx + 34.0,
                ly + 4.0,
                escape(name)
            );
        }
        let _ = writeln!(svg, "</g>");
        svg.push_str("</svg>\n");
        svg
    }
}

impl DistributionChart {
    fn positive(&self) -> Vec<Vec<f64>> {
        self.groups
            .iter()
            .map(|g| {
                let mut v: Vec<f64> = g
                    .values
                    .iter()
                    .copied()
                    .filter(|v| v.is_finite() && *v > 0.0)
                    .collect();
                v.sort_by(f64::total_cmp);
                v
            })
            .collect()
    }

    pub(crate) fn y_axis(&self) -> Axis {
        let all = self.positive();
        let min = all
            .iter()
            .filter_map(|v| v.first())
            .copied()
            .fold(f64::INFINITY, f64::min);
        let max = all
            .iter()
            .filter_map(|v| v.last())
            .copied()
            .fold(f64::NEG_INFINITY, f64::max);
        Axis::log(min, max, 10.0, HEIGHT - BOTTOM, TOP)
    }

    pub fn to_svg(&self) -> String {
        let y = self.y_axis();
        let (left, top, right, bottom) = (LEFT, TOP, WIDTH - RIGHT_PLAIN, HEIGHT - BOTTOM);
        let groups = self.positive();
        let slot = (right - left) / groups.len().max(1) as f64;
        let centre = |k: usize| left + slot * (k as f64 + 0.5);
        let x_ticks: Vec<(f64, String)> = self
            .groups
            .iter()
            .enumerate()
            .map(|(k, g)| (centre(k), g.name.clone()))
            .collect();
        let mut svg = String::new();
        open(&mut svg, &self.title, &self.subtitle);
        frame(
            &mut svg,
            (left, top, right, bottom),
            &x_ticks,
            &y,
            "",
            &self.y_label,
        );
        for (k, values) in groups.iter().enumerate() {
            let colour = PALETTE[k % PALETTE.len()];
            let cx = centre(k);
            let _ = writeln!(svg, "<g>");
            let _ = writeln!(svg, "<title>{}</title>", escape(&self.groups[k].name));
            if values.is_empty() {
                let _ = writeln!(
                    svg,
                    r##"<text x="{cx:.1}" y="{:.1}" font-size="12" text-anchor="middle" fill="#666666">no data</text>"##,
                    (top + bottom) / 2.0
                );
                let _ = writeln!(svg, "</g>");
                continue;
            }
            // Stepped violin: one bar per power-of-two bucket, as wide as its share.
            let mut buckets: Vec<(i32, usize)> = Vec::new();
            for v in values {
                let b = v.log2().floor() as i32;
                match buckets.last_mut() {
                    Some((last, n)) if *last == b => *n += 1,
                    _ => buckets.push((b, 1)),
                }
            }
            let most = buckets.iter().map(|b| b.1).max().unwrap_or(1) as f64;
            let half = slot * 0.42;
            let _ = writeln!(
                svg,
                r#"<g fill="{colour}" fill-opacity="0.22" stroke="{colour}" stroke-opacity="0.5" stroke-width="0.8">"#
            );
            for &(b, n) in &buckets {
                let lo = 2f64.powi(b).max(y.lo);
                let hi = 2f64.powi(b + 1).min(y.hi);
                let (py_lo, py_hi) = (y.map(lo), y.map(hi));
                let w = half * n as f64 / most;
                let _ = writeln!(
                    svg,
                    r#"<rect x="{:.1}" y="{py_hi:.1}" width="{:.1}" height="{:.1}"><title>{n} levels with {}..{} ANDs</title></rect>"#,
                    cx - w,
                    2.0 * w,
                    (py_lo - py_hi).max(0.5),
                    compact(2f64.powi(b)),
                    compact(2f64.powi(b + 1) - 1.0)
                );
            }
            let _ = writeln!(svg, "</g>");
            // Box plot.
            let q = |p: f64| quantile(values, p).unwrap_or(1.0);
            let (min, q1, med, q3, max) = (q(0.0), q(0.25), q(0.5), q(0.75), q(1.0));
            let bw = (slot * 0.14).min(26.0);
            let _ = writeln!(
                svg,
                r#"<g stroke="{colour}" stroke-width="1.6" fill="none">"#
            );
            let _ = writeln!(
                svg,
                r#"<line x1="{cx:.1}" y1="{:.1}" x2="{cx:.1}" y2="{:.1}"/>"#,
                y.map(min),
                y.map(q1)
            );
            let _ = writeln!(
                svg,
                r#"<line x1="{cx:.1}" y1="{:.1}" x2="{cx:.1}" y2="{:.1}"/>"#,
                y.map(q3),
                y.map(max)
            );
            for v in [min, max] {
                let _ = writeln!(
                    svg,
                    r#"<line x1="{:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}"/>"#,
                    cx - bw / 2.0,
                    y.map(v),
                    cx + bw / 2.0,
                    y.map(v)
                );
            }
            let _ = writeln!(
                svg,
                r##"<rect x="{:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="#ffffff" fill-opacity="0.85"/>"##,
                cx - bw,
                y.map(q3),
                2.0 * bw,
                (y.map(q1) - y.map(q3)).max(1.0)
            );
            let _ = writeln!(
                svg,
                r#"<line x1="{:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke-width="3"/>"#,
                cx - bw,
                y.map(med),
                cx + bw,
                y.map(med)
            );
            let _ = writeln!(svg, "</g>");
            let _ = writeln!(
                svg,
                r##"<text x="{:.1}" y="{:.1}" font-size="11" fill="#333333">median {}</text>"##,
                cx + bw + 4.0,
                y.map(med) - 4.0,
                compact(med.round())
            );
            let _ = writeln!(svg, "</g>");
        }
        svg.push_str("</svg>\n");
        svg
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Checks that every element is closed in order (a small XML well-formedness check:
    /// tags, self-closing tags, no stray `<`), returning the element names seen.
    fn balanced(svg: &str) -> Vec<String> {
        let mut stack: Vec<String> = Vec::new();
        let mut seen = Vec::new();
        let mut rest = svg;
        while let Some(start) = rest.find('<') {
            let end = rest[start..].find('>').expect("unterminated tag") + start;
            let tag = &rest[start + 1..end];
            assert!(!tag.contains('<'), "stray < inside a tag: {tag}");
            if let Some(name) = tag.strip_prefix('/') {
                let open = stack.pop().expect("closing tag without an opening one");
                assert_eq!(open, name.trim(), "tags closed out of order");
            } else {
                let name: String = tag
                    .chars()
                    .take_while(|c| !c.is_whitespace() && *c != '/')
                    .collect();
                // Attribute values must have their quotes balanced.
                assert_eq!(tag.matches('"').count() % 2, 0, "unbalanced quotes: {tag}");
                seen.push(name.clone());
                if !tag.ends_with('/') {
                    stack.push(name);
                }
            }
            rest = &rest[end + 1..];
        }
        assert!(stack.is_empty(), "unclosed elements: {stack:?}");
        seen
    }

    fn chart() -> LineChart {
        LineChart {
            title: "Speed-up <FGP & CGP>".into(),
            subtitle: "2 CPUs".into(),
            x_label: "threads".into(),
            y_label: "speed-up".into(),
            log2_x: false,
            y_from_zero: true,
            y_at_least: 0.0,
            x_ticks: Vec::new(),
            series: vec![
                Series::reference("ideal", vec![(1.0, 8.0), (4.0, 8.0)]),
                Series::new("BioMatch - CGP", vec![(1.0, 1.0), (2.0, 1.9), (4.0, 3.5)]),
                Series::new("MExp - FGP", vec![(1.0, 1.0), (2.0, 1.2), (4.0, f64::NAN)]),
            ],
        }
    }

    #[test]
    fn line_chart_is_well_formed_and_names_its_series() {
        let svg = chart().to_svg();
        let names = balanced(&svg);
        assert_eq!(names[0], "svg");
        assert!(svg.contains(r#"viewBox="0 0 760 460""#));
        assert!(svg.contains("BioMatch - CGP") && svg.contains("MExp - FGP"));
        assert!(
            svg.contains("Speed-up &lt;FGP &amp; CGP&gt;"),
            "title escaped"
        );
        assert!(
            svg.contains("stroke-dasharray"),
            "the reference line is dashed"
        );
        // Two solid series: 3 + 2 markers (the NaN point is left out) + 2 legend markers.
        assert_eq!(names.iter().filter(|n| *n == "circle").count(), 7);
        assert!(!svg.contains("NaN"));
    }

    #[test]
    fn points_land_where_the_axes_put_them() {
        let c = chart();
        let (x, y) = c.axes();
        // Data 1..4 on x: round ticks 1..4 (step 1) span the plot width exactly.
        assert_eq!(x.map(x.lo), LEFT);
        assert_eq!(x.map(x.hi), WIDTH - RIGHT_LEGEND);
        assert_eq!(y.lo, 0.0, "y starts at zero");
        assert_eq!(y.map(0.0), HEIGHT - BOTTOM);
        assert_eq!(y.map(y.hi), TOP);
        let mid = x.map((x.lo + x.hi) / 2.0);
        assert!((mid - (LEFT + WIDTH - RIGHT_LEGEND) / 2.0).abs() < 1e-9);
        let svg = c.to_svg();
        let want = format!(r#"cx="{:.1}" cy="{:.1}""#, x.map(2.0), y.map(1.9));
        assert!(svg.contains(&want), "{want} missing");
    }

    #[test]
    fn reference_lines_do_not_stretch_the_y_axis_and_fixed_ticks_are_kept() {
        let mut c = chart();
        let (_, y) = c.axes();
        assert!(
            y.hi < 8.0,
            "the ideal line at 8 is clipped, not shown in full"
        );
        assert!(c.to_svg().contains("clip-path"));
        c.x_ticks = vec![1.0, 2.0, 4.0];
        let (x, _) = c.axes();
        assert_eq!(x.ticks(), vec![1.0, 2.0, 4.0]);
        assert_eq!((x.map(1.0), x.map(4.0)), (LEFT, WIDTH - RIGHT_LEGEND));
        assert_eq!(x.label(4.0), "4");
        c.y_at_least = 10.0;
        let y = c.axes().1;
        assert!(y.hi > 10.0 && y.hi <= 12.0, "{}", y.hi);
        // Only reference lines: they set the range themselves.
        c.series.truncate(1);
        assert!(c.axes().1.hi >= 8.0);
    }

    #[test]
    fn log2_axis_has_power_of_two_ticks_equally_spaced() {
        let x = Axis::log(16.0, 1024.0, 2.0, 0.0, 600.0);
        let ticks = x.ticks();
        assert_eq!(ticks, vec![16.0, 32.0, 64.0, 128.0, 256.0, 512.0, 1024.0]);
        assert_eq!(x.map(16.0), 0.0);
        assert_eq!(x.map(1024.0), 600.0);
        assert!((x.map(128.0) - 300.0).abs() < 1e-9);
        assert_eq!(x.label(1024.0), "1024");
        let odd = Axis::log(20.0, 1000.0, 2.0, 0.0, 1.0);
        assert_eq!((odd.lo, odd.hi), (16.0, 1024.0));
    }

    #[test]
    fn linear_axis_uses_round_steps() {
        let a = Axis::linear(0.13, 0.92, false, 100.0, 0.0);
        assert_eq!(a.step, 0.2);
        assert!((a.lo - 0.0).abs() < 1e-12 && (a.hi - 1.0).abs() < 1e-12);
        assert_eq!(a.label(0.4), "0.4");
        let single = Axis::linear(3.0, 3.0, false, 0.0, 1.0);
        assert!(single.lo < 3.0 && single.hi > 3.0);
        let empty = Axis::linear(f64::INFINITY, f64::NEG_INFINITY, true, 0.0, 1.0);
        assert_eq!((empty.lo, empty.hi), (0.0, 1.0));
    }

    #[test]
    fn distribution_chart_is_well_formed() {
        let c = DistributionChart {
            title: "AND gates per level".into(),
            subtitle: String::new(),
            y_label: "ANDs per level".into(),
            groups: vec![
                Distribution {
                    name: "BioMatch".into(),
                    values: vec![1.0, 3.0, 64.0, 64.0, 65.0, 5000.0],
                },
                Distribution {
                    name: "empty".into(),
                    values: vec![0.0],
                },
            ],
        };
        let svg = c.to_svg();
        balanced(&svg);
        assert!(svg.contains("BioMatch") && svg.contains("no data"));
        let y = c.y_axis();
        assert_eq!((y.lo, y.hi), (1.0, 10_000.0));
        assert_eq!(y.ticks(), vec![1.0, 10.0, 100.0, 1000.0, 10_000.0]);
        // The median (64) is drawn at its log position.
        assert!(svg.contains(&format!("{:.1}", y.map(64.0))));
        assert!(svg.contains("median 64"));
    }

    #[test]
    fn quantiles_interpolate() {
        let v = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(quantile(&v, 0.0), Some(1.0));
        assert_eq!(quantile(&v, 1.0), Some(4.0));
        assert_eq!(quantile(&v, 0.5), Some(2.5));
        assert_eq!(quantile(&[], 0.5), None);
    }

    #[test]
    fn long_subtitles_wrap_at_spaces() {
        assert_eq!(wrap("aa bb cc", 5), vec!["aa bb", "cc"]);
        assert_eq!(wrap("toolongword x", 4), vec!["toolongword", "x"]);
        assert!(wrap("", 10).is_empty());
    }
}
