// The stylesheet report.html embeds: the page loads nothing from anywhere else.
#include "coordinator/report_html.hpp"

namespace kiln::coord {

std::string_view report_html_css() {
  return R"css(
body { font: 14px/1.4 system-ui, sans-serif; margin: 0 2em 2em; color: #1d2329; background: #fafbfc; }
h1 { font-size: 1.5em; margin: .6em 0 .2em; } h2 { font-size: 1.15em; margin: 1.6em 0 .4em; border-bottom: 1px solid #d0d7de; }
section { max-width: 1400px; }
table { border-collapse: collapse; background: #fff; }
th, td { border: 1px solid #d0d7de; padding: 3px 7px; text-align: left; vertical-align: top; }
th { background: #eef1f4; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.none { color: #6a737d; font-style: italic; }
header dl { display: grid; grid-template-columns: max-content auto; gap: 2px 14px; margin: .4em 0; }
header dt { color: #57606a; } header dd { margin: 0; font-family: ui-monospace, monospace; }
.verdict { display: inline-block; padding: 2px 12px; border-radius: 4px; color: #fff; font-weight: bold; text-transform: uppercase; }
.verdict-pass { background: #1a7f37; } .verdict-fail { background: #cf222e; }
.verdict-incomplete { background: #bf8700; } .verdict-error { background: #6e40c9; }
.sev { font-weight: bold; } .sev-critical { color: #a40e26; } .sev-error { color: #cf222e; }
.sev-warning { color: #9a6700; } .sev-info { color: #57606a; }
.evidence { font-family: ui-monospace, monospace; font-size: 12px; max-width: 420px; word-break: break-word; }
tr.node.status-bad td:first-child, tr.node.status-lost td:first-child { border-left: 4px solid #cf222e; }
tr.node.status-ok td:first-child { border-left: 4px solid #1a7f37; }
.bars { display: grid; grid-template-columns: max-content 420px max-content; gap: 3px 10px; align-items: center; }
.bar svg { display: block; } .bar-low rect.fill { fill: #cf222e; } .bar-ok rect.fill { fill: #2f81f7; }
table.heatmap td.cell { width: 54px; text-align: center; font-size: 12px; }
table.heatmap td.empty { background: #f0f0f0; }
.grid-title { margin: .8em 0 .3em; font-weight: bold; }
.legend { color: #57606a; font-size: 12px; margin: .3em 0; }
.timeline { background: #fff; border: 1px solid #d0d7de; padding: 6px; }
.round { display: grid; grid-template-columns: 60% 40%; align-items: center; font-size: 12px; margin: 2px 0; }
.round .track { position: relative; height: 16px; background: #f3f4f6; }
.round .span { position: absolute; top: 0; height: 16px; min-width: 2px; border-radius: 2px; }
.phase-plan .span { background: #2f81f7; } .phase-localize .span { background: #bf8700; }
.round .label { padding-left: 8px; white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
.st-pass { color: #1a7f37; } .st-fail, .st-error, .st-timeout { color: #cf222e; font-weight: bold; } .st-skip { color: #57606a; }
.telemetry-node { margin: .6em 0 1em; } .telemetry-node h3 { margin: .3em 0; font-size: 14px; }
svg.telemetry-plot { display: block; background: #fff; border: 1px solid #d0d7de; margin: 2px 0; }
svg.telemetry-plot text { font: 10px ui-monospace, monospace; fill: #57606a; }
svg.telemetry-plot line.check { stroke: #8c959f; stroke-dasharray: 3 3; }
svg.telemetry-plot polyline { fill: none; stroke-width: 1.5; }
)css";
}

}  // namespace kiln::coord
