// qinfer::Error — the one exception type every layer throws. Public: the C++ API lets it
// through, the C API turns it into a status code.
#pragma once

#include <stdexcept>
#include <string>

#include "qinfer/export.h"

namespace qinfer {

enum class ErrorCode : int {
  kOk = 0,
  kIo = 1,               // open/read/map failed
  kInvalidFile = 2,      // malformed or truncated GGUF
  kUnsupported = 3,      // valid but not supported (v1, big-endian, unknown type, arch)
  kMissingKey = 4,       // a required metadata key or tensor is absent
  kTypeMismatch = 5,     // a metadata key has another type than asked
  kInvalidArgument = 6,  // a caller passed something wrong
  kContextOverflow = 7,  // more tokens than the context holds
  kInternal = 8,
  kCancelled = 11,  // Session::cancel() stopped the call
};

class QINFER_API Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& message) : std::runtime_error(message), code_(code) {}
  ErrorCode code() const noexcept { return code_; }

 private:
  ErrorCode code_;
};

}  // namespace qinfer
