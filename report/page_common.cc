#include "report/page_common.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"

namespace dlio::report_internal {
namespace {

// The DOM helpers of every page script (page_common.h).
constexpr const char* kDomHelpers = R"js(
  const isNum = v => v !== null && v !== undefined && !Number.isNaN(v);
  const el = (tag, text, cls) => {
    const e = document.createElement(tag);
    if (text !== undefined) e.textContent = text;
    if (cls) e.className = cls;
    return e;
  };
  const main = document.getElementById('main');
  const section = (title) => { main.appendChild(el('h2', title)); const d = el('div'); main.appendChild(d); return d; };
  const table = (cls, header, rows) => {
    const t = el('table', undefined, cls);
    const h = el('tr'); header.forEach(c => h.appendChild(el('th', c))); t.appendChild(h);
    rows.forEach(r => { const tr = el('tr'); r.forEach(v => tr.appendChild(el('td', String(v)))); t.appendChild(tr); });
    return t;
  };
  const canvas = (box, id, w = 560, h = 320) => {
    const c = el('canvas'); c.id = id; c.width = w; c.height = h; box.appendChild(c); return c;
  };
  Chart.defaults.animation = false;
  Chart.defaults.responsive = false;
)js";

}  // namespace

std::string HtmlEscape(const std::string& text) {
  return absl::StrReplaceAll(text, {{"&", "&amp;"}, {"<", "&lt;"}, {">", "&gt;"}, {"\"", "&quot;"}});
}

std::string ScriptSafe(const std::string& text) { return absl::StrReplaceAll(text, {{"</", "<\\/"}}); }

std::string DataElement(const nlohmann::json& data) {
  return absl::StrCat("<script type=\"application/json\" id=\"dlio-data\">", ScriptSafe(data.dump()), "</script>\n");
}

std::string PageScript(const char* body) { return absl::StrCat("\n(function () {", kDomHelpers, body, "})();\n"); }

}  // namespace dlio::report_internal
