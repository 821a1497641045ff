// What the pages of `dlio-coordinator report` share (report.cc's job, ramp and --mlperf pages, scenario_page.cc's
// scenario page), in one place so they cannot drift apart: HTML escaping, JSON made safe inside a <script> element,
// the data element every page script reads, and the page scripts' DOM helpers.
//
// The helpers (kDomHelpers, JavaScript): isNum(v) (a number, not null/undefined/NaN); el(tag, text, cls) (an element
// with optional text and class); main (the page's <div id="main">); section(title) (an <h2> and a <div> appended to
// main, the div returned); table(cls, header, rows) (a <table> of header cells and rows of cells, String(v) each);
// canvas(box, id, width = 560, height = 320) (a <canvas> appended to box). They also turn Chart.js's animation and
// responsiveness off, so the charts are complete at load (the Chromium tests read them then).
// Thread-safety: pure functions and constants.
#pragma once

#include <string>

#include "nlohmann/json.hpp"

namespace dlio::report_internal {

// &, <, > and " as entities.
std::string HtmlEscape(const std::string& text);
// JSON inside <script>: "</" must not close the element.
std::string ScriptSafe(const std::string& text);
// <script type="application/json" id="dlio-data">DATA</script> and a newline: what a page script parses.
std::string DataElement(const nlohmann::json& data);
// A page's script: `body` inside one function scope after the DOM helpers (the text inside <script>...</script>).
std::string PageScript(const char* body);

}  // namespace dlio::report_internal
