// policy/explain.cc: decisions for people; everything shown comes from Decision and its
// detail, so explain cannot disagree with what moatd enforces.
#include "policy/explain.h"

#include <cstdio>

#include "base/log.h"

namespace moat::policy {
namespace {

using json = nlohmann::json;

std::string where(const json& ref) {
  std::string file = ref.value("file", "");
  int line = ref.value("line", 0);
  if (file.empty()) return "-";
  return file + (line > 0 ? ":" + std::to_string(line) : "");
}

std::string pad(std::string s, std::size_t n) {
  if (s.size() < n) s.append(n - s.size(), ' ');
  return s + " ";
}

// "loosened: default.inline-code (ask, builtin) by user.python (allow, user)"
std::string loosened_line(const json& l) {
  auto side = [](const json& r) {
    return r.value("id", "") + " (" + r.value("decision", "") + ", " + r.value("layer", "") + ")";
  };
  return pad("", 7) + "loosened: " + side(l["rule"]) + " by " + side(l["by"]) + "\n";
}

std::string upper(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

json ref_json(const RuleRef& r, const char* decision = nullptr) {
  json j = {{"id", r.id}, {"layer", r.layer}, {"file", r.file}, {"line", r.line}};
  if (decision != nullptr) j["decision"] = decision;
  return j;
}

}  // namespace

json explain_json(const Decision& d, const Policy& policy, const std::string& input) {
  const json detail = d.detail();
  json units = detail.is_object() && detail.contains("units") ? detail["units"] : json::array();
  json matched = json::array();
  for (const auto& m : d.matched) matched.push_back(ref_json(m));
  json out = {{"input", input},
              {"units", units},
              {"matched", matched},
              {"decision", verdict_name(d.verdict)},
              {"deciding_rule", ref_json(d.deciding)},
              {"decided_by", std::string(decided_by_name(d.decided_by))},
              {"reason", d.reason},
              {"policy_hash", policy.policy_hash()},
              {"mode", policy.headless() ? "headless" : "interactive"}};
  if (detail.is_object() && detail.contains("problems")) out["problems"] = detail["problems"];
  // Built-in asks the person's (user) layer loosened: [{rule, by}], each {id, layer, decision}.
  if (detail.is_object() && detail.contains("loosened")) out["loosened"] = detail["loosened"];
  if (!d.flagged.empty()) out["flagged"] = d.flagged;
  if (d.headless_downgraded) out["headless_downgraded"] = true;
  return out;
}

std::string explain_text(const Decision& d, const Policy& policy, const std::string& input) {
  std::string out;
  const json detail = d.detail();
  const json units =
      detail.is_object() && detail.contains("units") ? detail["units"] : json::array();
  if (!units.empty()) {
    int wrappers = 0;
    for (const auto& u : units) wrappers += u.value("wrapper", false) ? 1 : 0;
    out += pad("shell", 7) + pad(moat::quoted(input), 30) +
           "parsed: " + std::to_string(units.size()) + " units" +
           (wrappers ? " (" + std::to_string(wrappers) + " wrapper)" : "") + "\n";
    for (const auto& p : detail.value("problems", json::array()))
      out += pad("", 7) + "cannot judge statically: " + p.get<std::string>() + "\n";
    int n = 0;
    for (const auto& u : units) {
      std::string label = "unit " + std::to_string(++n);
      std::string argv = u.value("argv", "");
      if (u.contains("sets")) {
        std::string sets;
        for (const auto& n : u["sets"])
          sets += (sets.empty() ? "" : " ") + n.get<std::string>() + "=…";
        argv = argv.empty() ? sets : sets + " " + argv;
      }
      if (u.contains("via")) argv += "   (via " + u["via"].get<std::string>() + ")";
      if (u.value("depth", 0) > 0)
        argv += "   (depth " + std::to_string(u["depth"].get<int>()) + ")";
      std::string decision = u.value("decision", "none");
      if (!u.contains("deciding_rule")) {
        out += pad(label, 7) + pad(argv, 30) +
               (u.value("argv", "").empty() ? "sets variables: no rule names them\n"
                                            : "wrapper: no rule names it; its command decides\n");
        continue;
      }
      const json& dr = u["deciding_rule"];
      out += pad(label, 7) + pad(argv, 30) + pad(decision, 6) + pad(dr.value("id", ""), 26) +
             pad(dr.value("layer", ""), 8) + where(dr) + "\n";
      if (u.contains("program"))
        out += pad("", 7) + "program: " +
               (u["program"].is_null() ? std::string("not found on the sandbox PATH")
                                       : u["program"].get<std::string>()) +
               (u.value("program_writable", false) ? " (in a writable root: never allowed by name)"
                                                   : "") +
               "\n";
      for (const auto& p : u.value("problems", json::array()))
        out += pad("", 7) + "cannot judge statically: " + p.get<std::string>() + "\n";
      for (const auto& r : u.value("reads", json::array()))
        out += pad("", 7) + "reads: " + moat::quoted(r.get<std::string>()) + "\n";
      // A unit that is not allowed says why, unless the result line below says the same.
      if (decision != "allow" && u.contains("reason") && u["reason"] != d.reason)
        out += pad("", 7) + "why: " + u["reason"].get<std::string>() + "\n";
      for (const auto& l : u.value("loosened", json::array())) out += loosened_line(l);
      for (const auto& m : u.value("matched", json::array())) {
        if (m.contains("loosened_by")) continue;  // shown as loosened above
        if (m.value("id", "") == dr.value("id", "") &&
            m.value("layer", "") == dr.value("layer", ""))
          continue;
        std::string md = m.value("decision", "");
        out += pad("", 7) + "also matched: " + m.value("id", "") + " (" + md + ", " +
               m.value("layer", "") + ")" +
               (md != decision ? " -> overridden (" + decision + " > " + md + ")" : "") + "\n";
      }
    }
  } else {
    out += pad("input", 7) + moat::quoted(input) + "\n";
    const json loosened =
        detail.is_object() ? detail.value("loosened", json::array()) : json::array();
    for (const auto& l : loosened) out += loosened_line(l);
    for (const auto& m : d.matched) {
      if (m.id == d.deciding.id && m.file == d.deciding.file) continue;
      out += pad("", 7) + "also matched: " + m.id + " (" + m.layer + ")\n";
    }
  }
  std::string deciding = d.deciding.id;
  out += pad("result", 7) + pad(upper(verdict_name(d.verdict)), 6) + " deciding=" + deciding +
         "  " + d.deciding.layer + "  " +
         (d.deciding.file.empty() ? "-" : d.deciding.file + ":" + std::to_string(d.deciding.line)) +
         "  policy_hash=" + policy.policy_hash() +
         "  mode=" + (policy.headless() ? "headless" : "interactive") + "\n";
  if (!d.reason.empty()) out += pad("reason", 7) + d.reason + "\n";
  return out;
}

}  // namespace moat::policy
