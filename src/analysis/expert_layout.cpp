// SPDX-License-Identifier: MIT
#include "optadvisor/analysis/expert_layout.hpp"

#include <fmt/format.h>

#include "optadvisor/base/error.hpp"

namespace optadvisor {

void check_expert_layout(const ModelSpec& m, const EngineProfile* engine, const ExpertLayout& l, const std::string& prefix) {
  if (l.ep > 1 && m.num_experts == 0)
    throw bad_input(fmt::format("--{}ep {}: {} has no routed experts", prefix, l.ep, m.name), "expert parallelism applies to MoE models");
  if (l.ep > 1 && m.num_experts % l.ep != 0)
    throw bad_input(fmt::format("--{}ep {} does not divide the model's {} routed experts", prefix, l.ep, m.num_experts),
                    "pick an expert-parallel degree that divides the expert count");
  if (l.dp_attention > 1 && m.num_experts == 0)
    throw bad_input(fmt::format("--{}dp-attention {}: {} is a dense model", prefix, l.dp_attention, m.name),
                    "data-parallel attention pairs with expert parallelism on MoE models; run independent copies instead (serve: --workers, estimate: --replicas)");
  if (l.ep > 1 && l.gpus() % l.ep != 0)
    throw bad_input(fmt::format("--{}ep {} does not divide the worker's {} GPUs (tp {} x dp-attention {})", prefix, l.ep, l.gpus(), l.tp,
                                l.dp_attention),
                    "experts are sharded over every GPU of the worker: ep x (expert tensor parallel) = tp x dp-attention");
  if (engine && !engine->expert_parallel && (l.ep > 1 || l.dp_attention > 1))
    throw bad_input(fmt::format("--{}: {} has no expert parallelism", l.ep > 1 ? prefix + "ep" : prefix + "dp-attention", engine->name),
                    "vLLM, SGLang and TensorRT-LLM run it (--engine vllm)");
}

NodeLinks node_links(const HardwareProfile& hw) {
  NodeLinks n;
  const Link* up = hw.default_multi_gpu_link();
  n.scale_up_bytes_per_s = up ? up->per_direction_bytes_per_s() : 0;
  n.scale_out_bytes_per_s = hw.scale_out ? hw.scale_out->per_direction_bytes_per_s() : 0;
  n.node_gpus = hw.node_gpus;
  return n;
}

LayoutTraffic layout_traffic(const ModelSpec& m, const ExpertLayout& l, double layers, double moe_layers, const NodeLinks& links) {
  LayoutTraffic t;
  const double tp = std::max<uint32_t>(1, l.tp);
  const double hidden = static_cast<double>(m.hidden_size);
  const bool exchanged = l.exchanges_experts(m);
  if (tp > 1) {
    // A ring all-reduce moves 2(tp-1)/tp of a tokens x hidden bf16 message over each link
    // (Patarasuk and Yuan 2009, JPDC 69(2)); two per layer, after attention and after the MLP
    // (Shoeybi et al. 2019, "Megatron-LM", arXiv:1909.08053, section 3), one when the experts
    // are exchanged by all-to-all instead.
    t.allreduce_count = layers * (exchanged ? 1.0 : 2.0);
    t.allreduce_bytes_per_token = t.allreduce_count * 2.0 * (tp - 1) / tp * hidden * 2.0;
  }
  if (exchanged) {
    // Each token's hidden state goes to its k experts and comes back (dispatch in FP8, one byte
    // an element, combine in BF16, two: DeepEP), (G-1)/G of it off this GPU for G GPUs holding
    // experts; a rank's tp GPUs share its tokens.
    const double g = static_cast<double>(l.gpus());
    t.alltoall_bytes_per_token = moe_layers * static_cast<double>(m.num_experts_per_tok) * hidden * (1.0 + 2.0) * (g - 1) / g / tp;
    t.alltoall_count = moe_layers * 2.0;
  }
  const double g = static_cast<double>(l.gpus());
  if (links.node_gpus > 0 && g > links.node_gpus && links.scale_out_bytes_per_s > 0 && links.scale_up_bytes_per_s > 0) {
    const double slower = links.scale_up_bytes_per_s / links.scale_out_bytes_per_s;
    const double off_node = (g - links.node_gpus) / (g - 1);
    t.alltoall_bytes_per_token *= (1 - off_node) + off_node * slower;
    if (tp > links.node_gpus) t.allreduce_bytes_per_token *= slower;
  }
  return t;
}

double moe_layer_count(const ModelSpec& m) {
  double n = 0;
  for (uint64_t layer = 0; layer < m.num_hidden_layers; ++layer) n += is_moe_layer(m, layer) ? 1.0 : 0.0;
  return n;
}

}  // namespace optadvisor
