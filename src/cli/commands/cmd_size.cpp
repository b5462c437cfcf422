// SPDX-License-Identifier: MIT
// `optadvisor size`: how big is a model in a format, and with its KV cache.
#include <fmt/format.h>

#include "cli/common.hpp"
#include "optadvisor/render/report_size.hpp"

namespace optadvisor::cli {

void register_size(CLI::App& app, const GlobalOptions& global) {
  struct Options {
    ModelRequest model;
    SizeRequest size;
    bool verbose = false;
    FormatOption format;
  };
  auto o = std::make_shared<Options>();
  auto* cmd = app.add_subcommand("size", "Exact weight and KV-cache bytes of a model in a quantization format");
  add_model_options(cmd, o->model);
  cmd->add_option("--quant,-q", o->size.quant, "Format id (q4_k_m, awq-int4, fp8, mlx-4bit, ...) or 'all'");
  cmd->add_option("--context", o->size.context_tokens, "Tokens of context per sequence for the KV cache");
  cmd->add_option("--batch", o->size.batch, "Sequences sharing the KV cache")->capture_default_str();
  cmd->add_option("--kv-dtype", o->size.kv_dtype, "KV-cache element type: f16, bf16, fp8, q8_0, q4_0")->capture_default_str();
  cmd->add_flag("--verbose", o->verbose, "Per-group and per-storage-type breakdown");
  o->format.attach(cmd);
  cmd->callback([o, &global] {
    const Catalog& catalog = load_catalog(global);
    const SizeResult r = size_model(catalog, resolve_model(catalog, o->model), o->size);
    fmt::print("{}", render_size(r, o->format.get(), o->verbose, stdout_style(global)));
  });
}

}  // namespace optadvisor::cli
