// ServerCodec for FastCGI 1.0 (the Responder role, one request at a time per
// connection), for nginx's fastcgi_pass.
#pragma once

#include <memory>

#include "config/config.h"
#include "daemon/codec.h"

namespace gearbox {

std::unique_ptr<ServerCodec> MakeFastCgiCodec(const LimitsConfig& limits);

}  // namespace gearbox
