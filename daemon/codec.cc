#include "daemon/codec.h"

#include "daemon/fastcgi/fastcgi_codec.h"

namespace gearbox {

std::unique_ptr<ServerCodec> MakeHttpCodec(const LimitsConfig& limits);

std::unique_ptr<ServerCodec> MakeCodec(Protocol protocol,
                                       const LimitsConfig& limits) {
  switch (protocol) {
    case Protocol::kHttp:
      return MakeHttpCodec(limits);
    case Protocol::kFastCgi:
      return MakeFastCgiCodec(limits);
  }
  return nullptr;
}

}  // namespace gearbox
