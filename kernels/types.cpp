#include "kernels/types.hpp"

#include <cctype>
#include <string>

#include "qinfer/error.hpp"

namespace qinfer {

const TypeTraits& type_traits(TensorType type) {
  const auto id = static_cast<uint32_t>(type);
  if (id >= kTypeIdCount || !kTypeTable[id].valid) {
    throw Error(ErrorCode::kUnsupported, "unknown tensor type id " + std::to_string(id));
  }
  return kTypeTable[id];
}

std::string_view type_name(TensorType type) { return type_traits(type).name; }

std::optional<TensorType> type_from_name(std::string_view name) {
  for (uint32_t id = 0; id < kTypeIdCount; ++id) {
    const TypeTraits& t = kTypeTable[id];
    if (!t.valid || t.name.size() != name.size()) continue;
    bool same = true;
    for (size_t i = 0; i < name.size() && same; ++i) {
      same = std::tolower(static_cast<unsigned char>(name[i])) ==
             std::tolower(static_cast<unsigned char>(t.name[i]));
    }
    if (same) return static_cast<TensorType>(id);
  }
  return std::nullopt;
}

}  // namespace qinfer
