// sandbox/refusal_hint.cc: what would allow a refused action, and the refusal's text (see
// refusal_hint.h).
#include "sandbox/refusal_hint.h"

namespace moat::sandbox {
namespace {

// "FILE:LINE", or the layer's name when the rule has no file (a defaults entry).
std::string where(const policy::RuleRef& r) {
  if (r.file.empty()) return "the " + r.layer + " layer";
  return r.file + (r.line > 0 ? ":" + std::to_string(r.line) : "");
}

std::string with_slash(const std::string& dir) {
  return dir.empty() || dir.back() == '/' ? dir : dir + "/";
}

// The built-in default (no organisation layer): the person's own layer may loosen its asks
// (docs/policy.md, "Layers"), never its denies, which only leaving the layer out undoes.
std::string builtin_hint(const policy::Decision& d, const std::string& user_policy_dir,
                         const std::string& kind) {
  const bool asks = d.verdict == policy::Verdict::kAsk || d.headless_downgraded;
  if (!asks)
    return "the built-in default policy denies it; --no-default-policy leaves that layer out "
           "(then only your own and the organisation's layers decide)";
  return "an allow " + kind + " rule for it in a .toml file of your user layer (" +
         with_slash(user_policy_dir) + ") loosens the built-in default's " + d.deciding.id +
         " (see `moat policy explain`)";
}

}  // namespace

std::string how_to_allow(const policy::Decision& d, const std::string& user_policy_dir,
                         const std::string& kind) {
  if (d.decided_by == policy::DecidedBy::kUser || d.decided_by == policy::DecidedBy::kMoat) return "";
  const policy::RuleRef& r = d.deciding;
  if (r.layer == "system")
    return "only the owner of the organisation's system layer (" + where(r) +
           ") can allow it; no option of yours loosens that layer";
  if (r.layer == "cli") return "drop --policy " + (r.file.empty() ? "FILE" : r.file);
  if (r.layer == "user")
    return "change or remove rule " + r.id + " in your user layer (" + where(r) + ")";
  if (r.layer == "project")
    return "change rule " + r.id + " in the project's policy (" + where(r) +
           "), or leave the project layer untrusted";
  if (r.layer == "builtin") return builtin_hint(d, user_policy_dir, kind);
  return "";
}

std::string refusal_text(const policy::Decision& d, std::string_view what,
                         const std::string& user_policy_dir, const std::string& kind) {
  if (d.decided_by == policy::DecidedBy::kUser)
    return std::string(what) + " declined by the person (rule " + d.deciding.id +
           " asked for approval). Do not retry it; find another way or ask the person.";
  std::string s = std::string(what) + " refused by policy (" + policy::verdict_name(d.verdict) +
                  "): rule " + d.deciding.id + " (" + d.deciding.layer;
  if (!d.deciding.file.empty()) s += ", " + d.deciding.file + ":" + std::to_string(d.deciding.line);
  s += ")";
  if (!d.reason.empty()) s += ": " + d.reason;
  auto end_sentence = [&s] {
    if (s.back() != '.') s += ".";
  };
  if (d.verdict == policy::Verdict::kAsk) {
    end_sentence();
    s += " It needs a person's approval, which this session cannot ask for (headless)";
  }
  if (std::string hint = how_to_allow(d, user_policy_dir, kind); !hint.empty()) {
    end_sentence();
    s += " To allow it: " + hint;
  }
  end_sentence();
  return s;
}

}  // namespace moat::sandbox
