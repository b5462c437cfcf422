// SPDX-License-Identifier: MIT
#include <catch2/catch.hpp>

#include <algorithm>

#include "catalog/embedded.hpp"
#include "optadvisor/catalog/catalog.hpp"

using namespace optadvisor;

TEST_CASE("a resolved entry keeps its address when the whole list is loaded later", "[catalog]") {
  const Catalog c = Catalog::load({});
  const HardwareProfile& hw = c.resolve_hardware("rtx5090");
  const ModelSpec& m = c.resolve_model("llama-3.1-8b");
  CHECK(hw.document.is_object());  // parsed in full on resolution, document kept for `hw show`
  const auto& all = c.hardware();
  const auto it = std::find_if(all.begin(), all.end(), [](const HardwareProfile& h) { return h.id == "rtx5090"; });
  REQUIRE(it != all.end());
  CHECK(&*it == &hw);
  const auto& models = c.models();
  const auto mt = std::find_if(models.begin(), models.end(), [](const ModelSpec& s) { return s.id == "llama-3.1-8b"; });
  REQUIRE(mt != models.end());
  CHECK(&*mt == &m);
  CHECK(&c.resolve_hardware("rtx5090") == &hw);
}

TEST_CASE("the lazily loaded catalog holds the same entries as the fully checked one", "[catalog]") {
  // Every shipped hardware profile and model preset carries the names the catalog resolves without
  // parsing it (cmake/embed_data.cmake), and they match the document's own.
  std::size_t indexed = 0;
  for (const auto& f : embedded_files()) {
    const bool named = f.path.rfind("hardware/", 0) == 0 || f.path.rfind("models/", 0) == 0;
    if (named && f.path.size() > 5 && f.path.substr(f.path.size() - 5) == ".json") {
      CHECK(f.indexed);
      indexed += f.indexed ? 1 : 0;
    }
  }
  CHECK(indexed > 0);
  const Catalog lazy = Catalog::load({});
  REQUIRE(lazy.hardware().size() > 0);
  for (const auto& hw : lazy.hardware()) {
    CHECK(hw.document.value("id", "") == hw.id);
    CHECK(hw.document.value("aliases", std::vector<std::string>{}) == hw.aliases);
    CHECK(hw.document.value("default_for", std::vector<std::string>{}) == hw.default_for);
  }
  CHECK(lazy.resolve_hardware("5090").id == "rtx5090");  // an alias resolves before the profile is parsed
  CHECK(Catalog::validate({}).empty());                  // duplicate ids and name clashes: checked with every file parsed
}

TEST_CASE("models_of_type gives exactly the presets of that model_type, parsing only those", "[catalog]") {
  // The embedded index records each preset's model_type; a wrong or missing record would drop a
  // family member (or keep a stranger) here.
  for (const auto& f : embedded_files())
    if (f.path.rfind("models/", 0) == 0 && f.indexed) CHECK_FALSE(f.model_type.empty());
  const Catalog fresh = Catalog::load({});
  const auto llamas = fresh.models_of_type("llama");
  const Catalog full = Catalog::load({});
  std::vector<std::string> expected;
  for (const auto& m : full.models())
    if (m.model_type == "llama") expected.push_back(m.id);
  std::vector<std::string> got;
  for (const ModelSpec* m : llamas) got.push_back(m->id);
  CHECK(got == expected);
  CHECK(std::find(got.begin(), got.end(), "llama-3.1-8b") != got.end());
  CHECK(std::find(got.begin(), got.end(), "qwen3-8b") == got.end());
  CHECK(fresh.models_of_type("no-such-type").empty());
}
