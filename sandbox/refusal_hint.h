// sandbox/refusal_hint.h: the one option or rule that would allow a refused action, and whose
// it is to change, so a refusal never leaves the person guessing (issue 25): an organisation's
// rule only its owner can change, a --policy file can be dropped, the person's own layer can
// loosen the built-in default's asks; and the refusal's text that carries it (the call gate's and
// the exec gate's, which both use it).
#pragma once

#include <string>
#include <string_view>

#include "policy/policy.h"

namespace moat::sandbox {

// "only the owner of the system layer (/etc/moat/policy.d/00-org.toml) can allow it", "drop
// --policy /x/narrow.toml", "an allow [[command]] rule for it in a .toml file of your user
// layer (~/.config/moat/policy.d/) loosens the built-in default's ask", ...; "" when nothing
// but another answer would (a person declined it, or moat's own exec watch refused it).
// `user_policy_dir`: the user layer's directory as the session loaded it; `kind`: the table a
// rule that allows it would be ("[[command]]", "[[path]]").
std::string how_to_allow(const policy::Decision& d, const std::string& user_policy_dir,
                         const std::string& kind = "[[command]]");

// "refused by policy (deny): rule org.no-force-push (system, /etc/moat/policy.d/00.toml:17):
// why. To allow it: only the owner of ...", or the person's decline: how a refusal of `what`
// ("this call was") reads to the model and the person. The hint (how_to_allow) names
// `user_policy_dir` where the person's layer could loosen a built-in ask; `kind` is the table
// such a rule would be in.
std::string refusal_text(const policy::Decision& d, std::string_view what,
                         const std::string& user_policy_dir = "",
                         const std::string& kind = "[[command]]");

}  // namespace moat::sandbox
