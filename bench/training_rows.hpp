// SPDX-License-Identifier: MIT
// Rows of bench/data/training_runs.csv as training requests, shared by the
// training and effects benchmarks.
#pragma once

#include <cstdint>
#include <string>

#include "csv.hpp"
#include "optadvisor/analysis/training.hpp"
#include "optadvisor/catalog/catalog.hpp"

namespace optadvisor::bench {

inline double num(const CsvRow& r, const char* key, double fallback = 0) {
  auto it = r.find(key);
  if (it == r.end() || it->second.empty()) return fallback;
  return std::stod(it->second);
}

inline int64_t integer(const CsvRow& r, const char* key, int64_t fallback = 0) {
  return static_cast<int64_t>(num(r, key, static_cast<double>(fallback)));
}

inline std::string str(const CsvRow& r, const char* key) {
  auto it = r.find(key);
  return it == r.end() ? std::string() : it->second;
}

inline TrainingRequest request_from(const CsvRow& r) {
  TrainingRequest t;
  t.hardware = str(r, "hardware");
  t.engine = str(r, "engine");
  t.gpus = integer(r, "gpus");
  t.tp = integer(r, "tp", 1);
  t.pp = integer(r, "pp", 1);
  t.cp = integer(r, "cp", 1);
  t.seq = integer(r, "seq");
  t.micro_batch = integer(r, "micro_batch", 1);
  t.global_batch = integer(r, "global_batch");
  t.precision = str(r, "precision");
  t.recompute = str(r, "recompute");
  t.sharding = str(r, "sharding");
  t.sequence_parallel = integer(r, "sequence_parallel") != 0;
  t.pp_schedule = str(r, "pp_schedule");
  t.virtual_stages = str(r, "vp").empty() ? 0 : integer(r, "vp");
  if (t.pp == 1 || t.pp_schedule != "interleaved") t.virtual_stages = 0;
  t.flash_attention = integer(r, "flash_attention", 1) != 0;
  if (!str(r, "fused_loss").empty()) t.fused_loss = integer(r, "fused_loss") != 0;
  if (!str(r, "compile").empty()) t.compile = integer(r, "compile") != 0;
  return t;
}

/// The architecture a row states (GPT, MPT: hidden, layers, ... columns), or empty for a preset row.
inline bool states_architecture(const CsvRow& r) { return !str(r, "hidden").empty(); }

inline TrainingModel row_architecture(const CsvRow& r) {
  GptShape g;
  g.id = str(r, "model");
  g.hidden = static_cast<uint64_t>(integer(r, "hidden"));
  g.layers = static_cast<uint64_t>(integer(r, "layers"));
  g.heads = static_cast<uint64_t>(integer(r, "heads"));
  g.ffn = static_cast<uint64_t>(integer(r, "ffn"));
  g.vocab = static_cast<uint64_t>(integer(r, "vocab"));
  g.positions = static_cast<uint64_t>(integer(r, "positions"));
  g.tied = integer(r, "tied") != 0;
  g.biases = integer(r, "biases") != 0;
  g.dropout = integer(r, "dropout") != 0;
  return training_model(g);
}

/// A request prepared as the row states it; for an architecture row, `request` instead of the
/// row's own (so a caller may change it) with the row's architecture.
inline PreparedTraining prepare_request(const Catalog& catalog, const CsvRow& r, const TrainingRequest& request) {
  if (states_architecture(r)) return prepare_training(catalog, request, row_architecture(r));
  TrainingRequest with_model = request;
  if (with_model.model.preset.empty()) with_model.model.preset = str(r, "model");
  return prepare_training(catalog, with_model);
}

inline PreparedTraining prepare_row(const Catalog& catalog, const CsvRow& r) { return prepare_request(catalog, r, request_from(r)); }

}  // namespace optadvisor::bench
