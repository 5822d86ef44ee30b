// ordo: the precision of the weight products, apart from the encoder, so that the kernels that run
// them (engine/kernels/reduced.h) need not include the encoder that calls them. Public: <ordo/compute_type.h>.
#pragma once

#include <string>

namespace ordo {

// The precision of each layer's four weight products (in_proj, out_proj, linear1, linear2), but
// the first layer's in_proj, which reads the embeddings before any LayerNorm and stays in float;
// CTranslate2's name for the same choice. Everything else runs in float whatever the type.
// F32 is the default and the model's own floats; BF16 and Int8 need a build with oneDNN
// (engine/kernels/reduced.h says what each does to the numbers).
enum class ComputeType { F32, BF16, Int8 };
// "f32", "bf16", "int8" (std::invalid_argument for anything else) and back.
ComputeType parse_compute_type(const std::string& name);
const char* compute_type_name(ComputeType type);
// F32 always; BF16 and Int8 when the build has oneDNN.
bool compute_type_available(ComputeType type);

}  // namespace ordo
