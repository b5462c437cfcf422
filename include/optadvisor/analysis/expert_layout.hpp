// SPDX-License-Identifier: MIT
// Expert parallelism with data-parallel attention: the one place that says
// which layouts a mixture-of-experts model can run and what they move over
// the GPU link. estimate's forward pass and the serving step both use it.
#pragma once

#include <cstdint>
#include <string>

#include "optadvisor/catalog/engine.hpp"
#include "optadvisor/catalog/hardware.hpp"
#include "optadvisor/catalog/model.hpp"

namespace optadvisor {

/// A worker's split over its GPUs: attention (and every dense weight) tensor
/// parallel over `tp` GPUs in each of `dp_attention` ranks, each rank with its
/// own sequences and KV cache; the routed experts sharded over all tp x
/// dp_attention GPUs, exchanged by all-to-all when `ep` > 1 or dp_attention > 1.
struct ExpertLayout {
  uint32_t tp = 1;
  uint32_t dp_attention = 1;
  uint32_t ep = 1;
  uint32_t gpus() const { return tp * dp_attention; }
  bool exchanges_experts(const ModelSpec& m) const { return m.num_experts > 0 && (ep > 1 || dp_attention > 1); }
};

/// Checks a layout against the model and engine; throws bad_input naming the
/// option (`prefix` + "ep", "dp-attention"), with a hint. `engine` may be null
/// (the serving command checks its engines itself).
void check_expert_layout(const ModelSpec& m, const EngineProfile* engine, const ExpertLayout& l, const std::string& prefix);

/// What one forward step moves between a worker's GPUs, per token of an
/// attention rank, and how many collectives it waits for.
struct LayoutTraffic {
  double allreduce_bytes_per_token = 0;  ///< tensor-parallel all-reduces, over each GPU's link
  double allreduce_count = 0;            ///< all-reduces per step (each pays the engine's latency)
  double alltoall_bytes_per_token = 0;   ///< expert dispatch + combine, off this GPU
  double alltoall_count = 0;             ///< all-to-alls per step
};

/// The links a layout's collectives cross: the scale-up link within a node (or NVLink rack) of
/// node_gpus GPUs, and each GPU's scale-out network (its NIC) to the GPUs of other nodes.
struct NodeLinks {
  double node_gpus = 0;              ///< 0 = not recorded: every GPU on the scale-up link
  double scale_up_bytes_per_s = 0;   ///< per direction
  double scale_out_bytes_per_s = 0;  ///< per direction, per GPU
};
NodeLinks node_links(const HardwareProfile& hw);

/// `layers`: transformer blocks; `moe_layers`: those with routed experts. Bytes are counted at
/// the scale-up link's rate: where the layout spans nodes, the share a collective sends off its
/// node is scaled by how much slower the scale-out network is (an expert all-to-all sends
/// (G - node) / (G - 1) of its bytes to other nodes; a ring all-reduce over more than a node runs
/// at the network's rate).
LayoutTraffic layout_traffic(const ModelSpec& m, const ExpertLayout& l, double layers, double moe_layers, const NodeLinks& links = {});

/// Blocks with routed experts (is_moe_layer over the stack).
double moe_layer_count(const ModelSpec& m);

}  // namespace optadvisor
