#!/usr/bin/env python3
"""Draws the device-machine scaling charts in this folder from the tables in BENCHMARKS.md
(pgc bench apps' own --out charts of that run were not copied back; see BENCHMARKS.md).
The seed's points are the ones its text states (§1, §6.4); its plotted curves are not
recoverable from the extracted text. Run: python3 plot.py (writes the .svg files here)."""
import math

T = [1, 2, 4, 8, 16]
COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#17becf"]


def chart(path, title, subtitle, series, seed=(), ymax=16, xs=T, ylabel="speed-up"):
    W, H, L, R, TOP, B = 760, 460, 72, 560, 74, 398
    x = lambda t: L + (R - L) * math.log2(t) / math.log2(xs[-1])
    y = lambda v: B - (B - TOP) * min(v, ymax) / ymax
    o = [f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {W} {H}" width="{W}" height="{H}" '
         'font-family="Helvetica, Arial, sans-serif">',
         f'<rect x="0" y="0" width="{W}" height="{H}" fill="#ffffff"/>',
         f'<text x="380" y="26" font-size="17" font-weight="bold" text-anchor="middle" fill="#222">{title}</text>',
         f'<text x="380" y="45" font-size="11.5" text-anchor="middle" fill="#666">{subtitle}</text>',
         '<g stroke="#e3e3e3" stroke-width="1">']
    for t in xs:
        o.append(f'<line x1="{x(t):.1f}" y1="{TOP}" x2="{x(t):.1f}" y2="{B}"/>')
    step = 2 if ymax <= 16 else 4
    for v in range(0, ymax + 1, step):
        o.append(f'<line x1="{L}" y1="{y(v):.1f}" x2="{R}" y2="{y(v):.1f}"/>')
    o.append('</g>')
    o.append(f'<rect x="{L}" y="{TOP}" width="{R-L}" height="{B-TOP}" fill="none" stroke="#444"/>')
    o.append('<g font-size="11.5" fill="#333">')
    for t in xs:
        o.append(f'<text x="{x(t):.1f}" y="415" text-anchor="middle">{t}</text>')
    for v in range(0, ymax + 1, step):
        o.append(f'<text x="{L-8}" y="{y(v)+4:.1f}" text-anchor="end">{v}</text>')
    o.append(f'<text x="{(L+R)/2}" y="440" text-anchor="middle">threads per party</text>')
    o.append(f'<text x="22" y="{(TOP+B)/2}" text-anchor="middle" transform="rotate(-90 22 {(TOP+B)/2})">{ylabel}</text>')
    o.append('</g>')
    # ideal
    o.append('<polyline fill="none" stroke="#999" stroke-dasharray="4 4" points="' +
             " ".join(f"{x(t):.1f},{y(t):.1f}" for t in xs) + '"/>')
    legend = [("ideal (speed-up = threads)", "#999", "4 4", None)]
    for i, (name, pts, dash) in enumerate(series):
        c = COLORS[i % len(COLORS)]
        o.append(f'<polyline fill="none" stroke="{c}" stroke-width="2" stroke-dasharray="{dash}" points="' +
                 " ".join(f"{x(t):.1f},{y(v):.1f}" for t, v in pts) + '"/>')
        for t, v in pts:
            o.append(f'<circle cx="{x(t):.1f}" cy="{y(v):.1f}" r="3" fill="{c}"/>')
        legend.append((name, c, dash, None))
    for name, pts, c in seed:
        o.append(f'<polyline fill="none" stroke="{c}" stroke-width="1.5" stroke-dasharray="2 3" points="' +
                 " ".join(f"{x(t):.1f},{y(v):.1f}" for t, v in pts) + '"/>')
        for t, v in pts:
            o.append(f'<rect x="{x(t)-4:.1f}" y="{y(v)-4:.1f}" width="8" height="8" fill="none" stroke="{c}" stroke-width="1.5"/>')
        legend.append((name, c, "2 3", "square"))
    for i, (name, c, dash, mark) in enumerate(legend):
        ly = TOP + 8 + i * 18
        o.append(f'<line x1="575" y1="{ly}" x2="600" y2="{ly}" stroke="{c}" stroke-width="2" stroke-dasharray="{dash}"/>')
        o.append(f'<text x="606" y="{ly+4}" font-size="11" fill="#333">{name}</text>')
    o.append('</svg>')
    open(path, "w").write("\n".join(o) + "\n")


# Fig. 6, pgc bench apps --repeat 3 on the device machine (BENCHMARKS.md).
f6 = {
    "BioMatch CGP": [0.69, 1.05, 2.29, 2.61, 4.93], "MExp CGP": [0.84, 1.61, 2.54, 4.89, 4.09],
    "MVMul CGP": [0.68, 1.16, 2.12, 3.21, 2.05], "BioMatch FGP": [0.95, 0.47, 0.62, 1.20, 0.79],
    "MExp FGP": [0.88, 0.55, 0.52, 0.44, 0.56], "MVMul FGP": [1.00, 0.62, 0.80, 0.61, 0.21],
}
chart("fig6_offline_speedup.svg", "Offline garbling speed-up, pgc vs the seed (Fig. 6)",
      "pgc: 16-core Intel Xeon (KVM), pgc bench apps --repeat 3; seed: points its text states",
      [(k, list(zip(T, v)), "" if "CGP" in k else "6 3") for k, v in f6.items()],
      seed=[("seed MVMul CGP (3.9 on 4, 12 on 16)", [(1, 1), (4, 3.9), (16, 12)], "#000"),
            ("seed MVMul FGP (2.4 on 4, 7.5 on 16)", [(1, 1), (4, 2.4), (16, 7.5)], "#777")])
# Fig. 8: both parties in one process over loopback, T threads each (16 = 32 threads).
f8 = {"BioMatch CGP": [0.85, 1.02, 1.70, 1.67, 1.55], "MExp CGP": [1.02, 1.41, 1.83, 1.89, 1.29],
      "MVMul CGP": [0.92, 1.26, 1.20, 1.20, 1.06]}
chart("fig8_online_speedup.svg", "Protocol speed-up with CGP, both parties on 16 cores (Fig. 8)",
      "over --parallel none, 1 thread; T threads per party (16: 32 threads on 16 cores); seed κ=128 stopped gaining at 3",
      [(k, list(zip(T, v)), "") for k, v in f8.items()], ymax=8)
# Compact EDT: garbler alone and end to end (speed-up over 1 thread of garble::compact / of the run).
edt_off = [1.964 / s for s in [1.964, 2.657, 3.431, 3.875, 3.800]]
edt_e2e = [8.071 / s for s in [8.071, 22.436, 27.148, 25.730, 27.588]]
chart("edt_compact_threads.svg", "Compact edit distance on threads (issue 17 item 3)",
      "EDT-511 garbler alone (compact_threads) and EDT-1023 end to end, T threads per party",
      [("EDT-511 garbler alone", list(zip(T, edt_off)), ""), ("EDT-1023 end to end", list(zip(T, edt_e2e)), "")],
      ymax=4)

# 2026-11-26, main e4e4e0e (BENCHMARKS.md, "Re-measured on 16 cores"): the same charts with
# the first run's curves beside, written into that run's folder.
D = "2026-11-26-main/"
f6b = {"BioMatch CGP": [0.74, 1.38, 2.40, 3.44, 6.24], "MExp CGP": [1.06, 2.01, 2.91, 4.71, 6.15],
       "MVMul CGP": [0.88, 1.10, 2.18, 3.31, 2.75]}
chart(D + "fig6_offline_speedup_vs_seed.svg", "Offline garbling speed-up, pgc vs the seed (Fig. 6)",
      "2026-11-26 (solid) and the first 16-core run (dashed), pgc bench apps --repeat 3; seed: points its text states",
      [(k, list(zip(T, v)), "") for k, v in f6b.items()] +
      [(k + " (first run)", list(zip(T, f6[k])), "6 3") for k in f6b],
      seed=[("seed MVMul CGP (3.9 on 4, 12 on 16)", [(1, 1), (4, 3.9), (16, 12)], "#000"),
            ("seed MVMul FGP (2.4 on 4, 7.5 on 16)", [(1, 1), (4, 2.4), (16, 7.5)], "#777")])
f8b = {"BioMatch CGP": [1.25, 1.78, 2.70, 2.84, 3.01], "MExp CGP": [0.93, 1.50, 1.75, 2.10, 1.70],
       "MVMul CGP": [1.01, 1.32, 1.68, 1.29, 1.25]}
chart(D + "fig8_online_speedup_vs_first.svg", "Protocol speed-up with CGP, both parties on 16 cores (Fig. 8)",
      "2026-11-26 (solid) and the first 16-core run (dashed); over --parallel none, 1 thread; T threads per party",
      [(k, list(zip(T, v)), "") for k, v in f8b.items()] +
      [(k + " (first run)", list(zip(T, f8[k])), "6 3") for k in f8b], ymax=8)
edt_g = [3.384 / s for s in [3.384, 3.517, 2.934, 3.064, 3.789]]
edt_v = [3.919 / s for s in [3.919, 3.504, 2.844, 2.411, 2.848]]
edt_r = [3.652 / s for s in [3.652, 6.190, 4.795, 4.861, 4.228]]
chart(D + "edt_compact_threads.svg", "Compact edit distance on threads (issue 17 item 3)",
      "EDT-1023 (62.8 M AND): garbler and evaluator alone (compact_threads), end to end (pgc run × 2)",
      [("garbler alone", list(zip(T, edt_g)), ""), ("evaluator alone", list(zip(T, edt_v)), ""),
       ("end to end", list(zip(T, edt_r)), "")], ymax=4)
