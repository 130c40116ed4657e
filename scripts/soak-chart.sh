#!/usr/bin/env bash
# Draws scripts/soak.sh's samples (seconds,rss_kib,fds,threads) as an SVG:
# resident memory on top, open file descriptors and threads below, both
# against minutes. Flat lines are what a soak wants to see.
#
#   scripts/soak-chart.sh samples.csv "RocksDB, YCSB A, 4 threads" > soak.svg
set -euo pipefail
csv=${1:?usage: soak-chart.sh SAMPLES.csv [TITLE] > OUT.svg}
title=${2:-kvperf soak}
awk -F, -v title="$title" '
function esc(s) { gsub(/&/, "\\&amp;", s); gsub(/</, "\\&lt;", s); return s }
NR > 1 { t[n] = $1 / 60; r[n] = $2 / 1024; f[n] = $3; h[n] = $4; n++ }
END {
  if (n < 2) { print "soak-chart: fewer than two samples" > "/dev/stderr"; exit 2 }
  W = 720; H = 420; L = 70; R = 20; x0 = L; x1 = W - R
  tmax = t[n - 1]; if (tmax <= 0) tmax = 1
  rmax = 0; cmax = 0
  for (i = 0; i < n; i++) { if (r[i] > rmax) rmax = r[i]; if (f[i] > cmax) cmax = f[i]; if (h[i] > cmax) cmax = h[i] }
  rmax = rmax * 1.15; cmax = cmax * 1.25 + 1
  printf "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" font-family=\"sans-serif\" font-size=\"12\">\n", W, H
  printf "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
  printf "<text x=\"%d\" y=\"18\" font-size=\"14\">%s</text>\n", L, esc(title)
  # Two panels: [top, bottom] in pixels.
  panel(40, 210, rmax, "RSS (MiB)")
  line(r, 40, 210, rmax, "#1f77b4")
  panel(250, 390, cmax, "fds, threads")
  line(f, 250, 390, cmax, "#d62728"); line(h, 250, 390, cmax, "#2ca02c")
  printf "<text x=\"%d\" y=\"265\" fill=\"#d62728\">open file descriptors</text>\n", x1 - 250
  printf "<text x=\"%d\" y=\"280\" fill=\"#2ca02c\">threads</text>\n", x1 - 250
  for (m = 0; m <= 4; m++) {
    x = x0 + (x1 - x0) * m / 4
    printf "<text x=\"%.1f\" y=\"408\" text-anchor=\"middle\">%.0f</text>\n", x, tmax * m / 4
  }
  printf "<text x=\"%d\" y=\"408\" text-anchor=\"end\">min</text>\n", x0 - 8
  print "</svg>"
}
function panel(top, bottom, vmax, label,   k, y) {
  printf "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"#999\"/>\n", x0, top, x1 - x0, bottom - top
  for (k = 0; k <= 4; k++) {
    y = bottom - (bottom - top) * k / 4
    printf "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%.0f</text>\n", x0 - 6, y + 4, vmax * k / 4
  }
  printf "<text x=\"%d\" y=\"%d\" transform=\"rotate(-90 %d %d)\" text-anchor=\"middle\">%s</text>\n", 14, (top + bottom) / 2, 14, (top + bottom) / 2, label
}
function line(v, top, bottom, vmax, colour,   i, pts) {
  pts = ""
  for (i = 0; i < n; i++)
    pts = pts sprintf("%.1f,%.1f ", x0 + (x1 - x0) * t[i] / tmax, bottom - (bottom - top) * v[i] / vmax)
  printf "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"%s\"/>\n", colour, pts
}' "$csv"
