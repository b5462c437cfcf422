// SPDX-License-Identifier: MIT
// DeepSeek-V4 (model_type deepseek_v4): its block tensors, checkpoint terms, KV layout and checks.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "optadvisor/catalog/model.hpp"

namespace optadvisor::catalog_detail {

bool is_deepseek_v4(const ModelSpec& s);

/// Tensors of decoder block `layer` (MTP blocks continue the numbering after the main layers).
void add_deepseek_v4_block(const ModelSpec& s, uint64_t layer, std::vector<Tensor>& out);

/// The hyper-connection head that collapses the hc_mult streams before the final norm.
void add_deepseek_v4_head(const ModelSpec& s, std::vector<Tensor>& out);

/// Per MTP module beyond the shared enorm/hnorm/norm and e_proj + h_proj: its own hc head.
uint64_t deepseek_v4_mtp_head_elements(const ModelSpec& s);

/// FP8 block scales of the MTP modules' e_proj and h_proj (hidden x hidden each).
uint64_t deepseek_v4_mtp_scale_elements(const ModelSpec& s, uint64_t block_rows, uint64_t block_cols);

/// True for kinds the checkpoint keeps in BF16/F32/int (no FP8 scale): the compressors, the
/// hyper-connection parameters and the hash-routing table.
bool is_unscaled_deepseek_v4_kind(const std::string& kind);

/// Cache layout: every layer a window of head_dim entries, the compressed layers their pooled
/// entries on top (see KvShape::compressed_elements_per_token).
KvShape deepseek_v4_kv_shape(const ModelSpec& s);

/// What a preset's V4 fields get wrong: (JSON pointer, message) pairs.
std::vector<std::pair<std::string, std::string>> deepseek_v4_problems(const ModelSpec& s);

/// Writes the V4 fields of `s` into a preset document.
void write_deepseek_v4(nlohmann::json& j, const ModelSpec& s);

}  // namespace optadvisor::catalog_detail
