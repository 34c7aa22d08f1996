#include "daemon/codec.h"

namespace gearbox {

std::unique_ptr<ServerCodec> MakeHttpCodec(const LimitsConfig& limits);

std::unique_ptr<ServerCodec> MakeCodec(Protocol protocol,
                                       const LimitsConfig& limits) {
  switch (protocol) {
    case Protocol::kHttp:
      return MakeHttpCodec(limits);
    case Protocol::kFastCgi:
      break;  // the FastCGI codec arrives with its issue
  }
  return nullptr;
}

}  // namespace gearbox
