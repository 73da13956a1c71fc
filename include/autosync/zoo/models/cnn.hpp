// autosync/zoo/models/cnn.hpp — ResNet-50/101/152 and VGG16 (torchvision), tensors and layers.
#pragma once

#include <autosync/zoo/models/builder.hpp>

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace autosync::zoo {

// ---------------------------------------------------------------------------------------------
// ResNet (torchvision v1.5: the stride sits on the 3x3 conv2 of a bottleneck).
//
//   224 --conv1 7x7/2--> 112 --maxpool 3x3/2--> 56 --layer1--> 56 --layer2--> 28 --layer3--> 14
//       --layer4--> 7 --avgpool--> 2048 --fc--> 1000 --cross entropy
//
// Bottleneck (planes p, input c, stride s on the first block of layers 2-4), as
// torchvision's Bottleneck.forward runs it (ReLU in place):
//   conv1 1x1 c->p, bn1, relu | conv2 3x3/s p->p, bn2, relu | conv3 1x1 p->4p, bn3 |
//   [downsample.0 1x1/s c->4p, downsample.1] | out += identity, relu
// The stem's conv1 computes no input gradient (the images need none).
inline model_spec resnet(std::string_view name, std::array<int, 4> blocks, std::int64_t batch = 32) {
  detail::check_batch(batch);
  const std::size_t count = 3 + 9 * std::size_t(blocks[0] + blocks[1] + blocks[2] + blocks[3]) + 4 * 3 + 2;
  detail::builder b(name, batch, "torchvision models/resnet.py (Bottleneck v1.5), named_parameters() order; "
                    "FLOPs at 224x224", count);
  b.conv("conv1", 3, 64, 7, 112, 112, false, 2, false);
  b.norm("bn1", 64, 64 * 112 * 112 * batch, true);
  b.op(layer_kind::activation, "relu", 64 * 112 * 112 * batch);
  b.pool(layer_kind::max_pool, "maxpool", 64 * 112 * 112 * batch, 64 * 56 * 56 * batch);
  std::int64_t in = 64, hw = 56;  // after the stem's max pool
  for (std::size_t stage = 0; stage < 4; ++stage) {
    const std::int64_t planes = std::int64_t{64} << stage;
    for (std::size_t blk = 0; blk < std::size_t(blocks[stage]); ++blk) {
      const std::string p = detail::indexed("layer" + std::to_string(stage + 1) + ".", blk, ".");
      const bool first = blk == 0;
      const std::int64_t stride = (first && stage > 0) ? 2 : 1;
      const std::int64_t out_hw = hw / stride;
      const std::int64_t mid = planes * hw * hw * batch, mid_out = planes * out_hw * out_hw * batch;
      const std::int64_t wide = 4 * planes * out_hw * out_hw * batch;
      b.conv(p + "conv1", in, planes, 1, hw, hw, false);
      b.norm(p + "bn1", planes, mid, true);
      b.op(layer_kind::activation, p + "relu1", mid);
      b.conv(p + "conv2", planes, planes, 3, out_hw, out_hw, false, stride);
      b.norm(p + "bn2", planes, mid_out, true);
      b.op(layer_kind::activation, p + "relu2", mid_out);
      b.conv(p + "conv3", planes, 4 * planes, 1, out_hw, out_hw, false);
      b.norm(p + "bn3", 4 * planes, wide, true);
      if (first) {
        b.conv(p + "downsample.0", in, 4 * planes, 1, out_hw, out_hw, false, stride);
        b.norm(p + "downsample.1", 4 * planes, wide, true);
      }
      b.op(layer_kind::add, p + "residual", wide);
      b.op(layer_kind::activation, p + "relu3", wide);
      in = 4 * planes;
      hw = out_hw;
    }
  }
  b.pool(layer_kind::avg_pool, "avgpool", 2048 * 7 * 7 * batch, 2048 * batch);
  b.linear("fc", 2048, 1000, batch);
  b.op(layer_kind::loss, "loss", 1000 * batch);
  return std::move(b).finish();
}

inline model_spec resnet50(std::int64_t batch = 32) { return resnet("resnet50", {3, 4, 6, 3}, batch); }
inline model_spec resnet101(std::int64_t batch = 32) { return resnet("resnet101", {3, 4, 23, 3}, batch); }
inline model_spec resnet152(std::int64_t batch = 32) { return resnet("resnet152", {3, 8, 36, 3}, batch); }

// ---------------------------------------------------------------------------------------------
// VGG16 (torchvision cfg "D", no batch norm). `features` is a Sequential in which every conv is
// followed by a ReLU (in place) and every 'M' is a 2x2 max pool, so the convs sit at indices
// 0 2 | 5 7 | 10 12 14 | 17 19 21 | 24 26 28; avgpool (adaptive 7x7); classifier: Linear(0)
// ReLU Dropout Linear(3) ReLU Dropout Linear(6); cross entropy.
inline model_spec vgg16(std::int64_t batch = 32) {
  detail::check_batch(batch);
  detail::builder b("vgg16", batch, "torchvision models/vgg.py cfg D, named_parameters() order; FLOPs at 224x224",
                    32);
  constexpr std::array<int, 18> cfg{64, 64, 0, 128, 128, 0, 256, 256, 256, 0, 512, 512, 512, 0, 512, 512, 512, 0};
  std::int64_t in = 3, hw = 224;
  std::size_t index = 0;
  for (int c : cfg) {
    if (c == 0) {  // max pool
      b.pool(layer_kind::max_pool, detail::indexed("features.", index, ""), in * hw * hw * batch, in * (hw / 2) * (hw / 2) * batch);
      hw /= 2;
      index += 1;
      continue;
    }
    b.conv(detail::indexed("features.", index, ""), in, c, 3, hw, hw, true, 1, index > 0);
    b.op(layer_kind::activation, detail::indexed("features.", index + 1, ""), c * hw * hw * batch);
    in = c;
    index += 2;  // conv + ReLU
  }
  b.pool(layer_kind::avg_pool, "avgpool", 512 * 7 * 7 * batch, 512 * 7 * 7 * batch);
  b.linear("classifier.0", 512 * 7 * 7, 4096, batch);
  b.op(layer_kind::activation, "classifier.1", 4096 * batch);
  b.op(layer_kind::dropout, "classifier.2", 4096 * batch);
  b.linear("classifier.3", 4096, 4096, batch);
  b.op(layer_kind::activation, "classifier.4", 4096 * batch);
  b.op(layer_kind::dropout, "classifier.5", 4096 * batch);
  b.linear("classifier.6", 4096, 1000, batch);
  b.op(layer_kind::loss, "loss", 1000 * batch);
  return std::move(b).finish();
}

}  // namespace autosync::zoo
