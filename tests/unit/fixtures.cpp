// SPDX-License-Identifier: MIT
#include "fixtures.hpp"

namespace optadvisor::fixtures {

const Catalog& catalog() {
  static const Catalog c = Catalog::load({});
  return c;
}

ResolvedModel model(const std::string& id) {
  ModelRequest m;
  m.preset = id;
  return resolve_model(catalog(), m);
}

}  // namespace optadvisor::fixtures
