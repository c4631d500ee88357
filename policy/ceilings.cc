// policy/ceilings.cc: which layer sets each resource ceiling (see ceilings.h).
#include "policy/ceilings.h"

#include <optional>

namespace moat::policy {
namespace {

enum class Unit { kDuration, kSize, kCount };

struct CeilingKey {
  const char* key;
  std::optional<std::int64_t> Resources::*member;
  std::int64_t ResourceCeilings::*effective;
  Unit unit;
};

// schema.h's Resources, key by key, with where kDefaultResources keeps its default.
constexpr CeilingKey kKeys[] = {
    {"wall_time", &Resources::wall_time, &ResourceCeilings::wall_time_s, Unit::kDuration},
    {"cpu_time", &Resources::cpu_time, &ResourceCeilings::cpu_time_s, Unit::kDuration},
    {"memory", &Resources::memory, &ResourceCeilings::memory_bytes, Unit::kSize},
    {"pids", &Resources::pids, &ResourceCeilings::pids, Unit::kCount},
    {"output", &Resources::output, &ResourceCeilings::output_bytes, Unit::kSize},
    {"file_size", &Resources::file_size, &ResourceCeilings::file_size, Unit::kSize},
    {"open_files", &Resources::open_files, &ResourceCeilings::open_files, Unit::kCount},
    {"network_connections", &Resources::network_connections,
     &ResourceCeilings::network_connections, Unit::kCount},
    {"network_bytes", &Resources::network_bytes, &ResourceCeilings::network_bytes, Unit::kSize},
    {"network_idle", &Resources::network_idle, &ResourceCeilings::network_idle_s,
     Unit::kDuration},
    {"network_rate", &Resources::network_rate, &ResourceCeilings::network_rate, Unit::kCount},
};

const LoadedLayer* lowest(const std::vector<LoadedLayer>& layers, const CeilingKey& k,
                          bool binding, const char* kind) {
  const LoadedLayer* best = nullptr;
  for (const auto& l : layers) {
    const auto& v = l.file.resources.*k.member;
    const bool counts = binding ? (l.kind != "builtin" && l.kind != "user") : l.kind == kind;
    if (counts && v && (best == nullptr || *v < *(best->file.resources.*k.member))) best = &l;
  }
  return best;
}

// The layer whose value is the effective one, or nullptr for the default.
const LoadedLayer* setter(const std::vector<LoadedLayer>& layers, const CeilingKey& k) {
  const LoadedLayer* start = lowest(layers, k, false, "user");
  if (start == nullptr) start = lowest(layers, k, false, "builtin");
  const LoadedLayer* bind = lowest(layers, k, true, "");
  if (bind != nullptr &&
      (start == nullptr || *(bind->file.resources.*k.member) < *(start->file.resources.*k.member)))
    return bind;
  return start;
}

std::string with_unit(std::int64_t v, const std::pair<std::int64_t, const char*>* units,
                      std::size_t n, const char* none) {
  for (std::size_t i = 0; i < n; ++i)
    if (v != 0 && v % units[i].first == 0)
      return std::to_string(v / units[i].first) + units[i].second;
  return std::to_string(v) + none;
}

}  // namespace

std::vector<CeilingSource> ceiling_sources(const std::vector<LoadedLayer>& layers) {
  std::vector<CeilingSource> out;
  for (const CeilingKey& k : kKeys) {
    const LoadedLayer* l = setter(layers, k);
    out.push_back({k.key, l ? *(l->file.resources.*k.member) : kDefaultResources.*k.effective,
                   l ? l->kind : "", l ? l->file.file : ""});
  }
  return out;
}

std::string format_ceiling(const std::string& key, std::int64_t value) {
  static const std::pair<std::int64_t, const char*> kTimes[] = {{3600, "h"}, {60, "m"}, {1, "s"}};
  static const std::pair<std::int64_t, const char*> kSizes[] = {
      {std::int64_t{1} << 30, "GiB"}, {std::int64_t{1} << 20, "MiB"}, {1024, "KiB"}};
  for (const CeilingKey& k : kKeys) {
    if (key != k.key) continue;
    if (k.unit == Unit::kDuration) return with_unit(value, kTimes, 3, "s");
    if (k.unit == Unit::kSize) return with_unit(value, kSizes, 3, " bytes");
  }
  return std::to_string(value);
}

std::vector<IdleCeiling> idle_ceilings(const std::vector<LoadedLayer>& layers) {
  std::vector<IdleCeiling> out;
  const std::vector<CeilingSource> effective = ceiling_sources(layers);
  for (std::size_t i = 0; i < std::size(kKeys); ++i) {
    const CeilingSource& e = effective[i];
    for (const auto& l : layers) {
      const auto& v = l.file.resources.*kKeys[i].member;
      // The built-in default's value is a starting point; replacing it is by design.
      if (!v || l.kind == "builtin" || *v == e.value) continue;
      out.push_back({l.file.file, "resources." + e.key + " = " + format_ceiling(e.key, *v) +
                                      " (" + l.kind + " layer) has no effect: the " + e.layer +
                                      " layer's " + format_ceiling(e.key, e.value) + " (" +
                                      e.file + ") binds" +
                                      (l.kind == "user"
                                           ? "; the user layer replaces only the built-in "
                                             "default's ceilings"
                                           : "; a system, project or cli ceiling only lowers")});
    }
  }
  return out;
}

}  // namespace moat::policy
