#pragma once
/// URL path segments built from configuration or caller input (deployment and model names).

#include <string>
#include <string_view>

namespace tollgate::providers {

/// `s` percent-encoded as one URL path segment: every byte but RFC 3986's unreserved ones
/// (ALPHA / DIGIT / "-" / "." / "_" / "~") is written %XX; "." and ".." become %2E segments,
/// so no name can add segments, a query or a fragment.
std::string path_segment(std::string_view s);

}  // namespace tollgate::providers
