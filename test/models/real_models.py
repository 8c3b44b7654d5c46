"""Models nobody on the project wrote: torchvision, torchaudio and torch.nn as users write them.

Each entry builds the model with random weights (seeded) and two input sets of different shapes
(another batch and, where the model allows, another spatial or sequence size). Small sizes keep
the real-model suite fast on two cores; correctness does not depend on them.

    /usr/bin/python3 test/models/real_models.py --table    # the README's table: kernels and fallbacks

`test/python/test_real_models.py` runs every entry through static_runtime against eager PyTorch.
"""

import argparse
import dataclasses
import sys
from typing import Any, Callable, Dict, List, Optional, Tuple

import torch
from torch import Tensor, nn
from torch.nn import functional as F

# Why each op that is still a JIT fallback in some model remains one. The README's table prints
# these; an op missing here makes --table fail, so every fallback has a stated reason.
# (None today: nn.MultiheadAttention's fast path, the last, runs as a kernel,
# ops/attention/aten_fast_paths.cpp.)
FALLBACK_REASONS: Dict[str, str] = {}


@dataclasses.dataclass
class RealModel:
    name: str
    build: Callable[[], nn.Module]
    inputs: List[Tuple[Any, ...]]
    # Vision classifiers must run with no JIT fallback at all.
    zero_fallbacks: bool = False
    # Traced instead of scripted (the model cannot be scripted).
    traced: bool = False
    # Largest difference allowed, relative to the reference's largest magnitude.
    tolerance: float = 1e-4
    # BatchNorm statistics set from a random batch (static_runtime.bench.calibrate_batch_norm):
    # with torchvision's fresh ones some networks' outputs vanish (mobilenet_v2's near 1e-9), and
    # a tolerance would need to be relative to ever smaller magnitudes.
    calibrated: bool = False
    # Outputs chosen by ranking near-equal scores (a detector's top proposals, with random
    # weights): bfloat16's rounding legitimately picks others, so the bfloat16 test checks what
    # it returns (structure, no fallbacks), not the values.
    selects_by_rank: bool = False
    # Every constant weight is one a kernel packs itself (transposed convolutions): with
    # fp32_precision="bf16" the kernel packs it for bfloat16, the bf16_weights pass repacks none.
    kernels_pack_every_weight: bool = False
    # The weights' seed (set by entries()).
    seed: int = 0


def _vit_with_random_head() -> nn.Module:
    """torchvision's ViT zero-initializes its classifier: every output would be the head's bias."""
    from torchvision import models

    model = models.vit_b_16(image_size=32)
    nn.init.normal_(model.heads.head.weight, std=0.02)
    return model


def _images(channels: int, *shapes: Tuple[int, int, int]) -> List[Tuple[Tensor]]:
    return [(torch.randn(batch, channels, height, width),) for batch, height, width in shapes]


class RecurrentClassifier(nn.Module):
    """Token ids -> embedding -> 2-layer bidirectional LSTM/GRU -> linear head on the last step."""

    def __init__(self, kind: str) -> None:
        super().__init__()
        self.embedding = nn.Embedding(100, 32)
        self.rnn = getattr(nn, kind)(32, 48, num_layers=2, bidirectional=True, batch_first=True)
        self.head = nn.Linear(96, 5)

    def forward(self, tokens: Tensor) -> Tensor:
        out, _ = self.rnn(self.embedding(tokens))
        return self.head(out[:, -1])


class PaddedTransformerEncoder(nn.Module):
    """nn.TransformerEncoder with a key-padding mask: inference turns the batch into a nested tensor."""

    def __init__(self) -> None:
        super().__init__()
        layer = nn.TransformerEncoderLayer(128, 4, 512, batch_first=True, activation="gelu")
        self.encoder = nn.TransformerEncoder(layer, 3)

    def forward(self, x: Tensor, padding: Tensor) -> Tensor:
        return self.encoder(x, src_key_padding_mask=padding)


class EncoderDecoder(nn.Module):
    """nn.Transformer with a causal target mask and padding masks on source and target."""

    def __init__(self) -> None:
        super().__init__()
        self.transformer = nn.Transformer(64, 4, 2, 2, 128, batch_first=True)

    def forward(self, src: Tensor, tgt: Tensor, src_padding: Tensor, tgt_padding: Tensor) -> Tensor:
        causal = torch.triu(torch.full((tgt.size(1), tgt.size(1)), float("-inf")), diagonal=1)
        return self.transformer(
            src, tgt, tgt_mask=causal, src_key_padding_mask=src_padding,
            tgt_key_padding_mask=tgt_padding, memory_key_padding_mask=src_padding)


class SelfAttention(nn.Module):
    """nn.MultiheadAttention used directly, with a padding mask and the averaged attention weights."""

    def __init__(self) -> None:
        super().__init__()
        self.attention = nn.MultiheadAttention(64, 4, batch_first=True)

    def forward(self, x: Tensor, padding: Tensor) -> Tuple[Tensor, Optional[Tensor]]:
        return self.attention(x, x, x, key_padding_mask=padding)


class AudioClassifier(nn.Module):
    """1-D convolutions with batch norm, max and adaptive average pooling, as keyword spotters do."""

    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv1d(8, 32, 5, padding=2), nn.BatchNorm1d(32), nn.ReLU(), nn.MaxPool1d(2),
            nn.Conv1d(32, 32, 3, dilation=2, padding=2, groups=4), nn.ELU(), nn.AvgPool1d(2, ceil_mode=True),
            nn.AdaptiveAvgPool1d(1), nn.Flatten())
        self.head = nn.Linear(32, 4)

    def forward(self, x: Tensor) -> Tensor:
        return self.head(self.features(x))


class MelSpectrogramClassifier(nn.Module):
    """Audio tagging as it is usually written: torchaudio's MelSpectrogram and AmplitudeToDB in the
    model, then a small CNN over the log-mel image."""

    def __init__(self) -> None:
        super().__init__()
        import torchaudio

        self.mel = torchaudio.transforms.MelSpectrogram(16000, n_fft=512, hop_length=160, n_mels=64)
        self.db = torchaudio.transforms.AmplitudeToDB()
        self.net = nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
            nn.Linear(32, 10))

    def forward(self, wav: Tensor) -> Tensor:
        return self.net(self.db(self.mel(wav)).unsqueeze(1))


class PackedLstm(nn.Module):
    """Variable-length sequences the way NLP code batches them: pack_padded_sequence (unsorted
    lengths), a bidirectional LSTM on the packed data, pad_packed_sequence, a linear head."""

    def __init__(self) -> None:
        super().__init__()
        self.rnn = nn.LSTM(12, 24, bidirectional=True, batch_first=True)
        self.head = nn.Linear(48, 5)

    def forward(self, x: Tensor, lengths: Tensor) -> Tensor:
        packed = nn.utils.rnn.pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
        out, _ = self.rnn(packed)
        padded, _ = nn.utils.rnn.pad_packed_sequence(out, batch_first=True, total_length=x.size(1))
        return self.head(padded)


class ProjectedLstm(nn.Module):
    """A bidirectional LSTM with projections (LSTMP, speech recognition encoders)."""

    def __init__(self) -> None:
        super().__init__()
        self.rnn = nn.LSTM(20, 32, num_layers=2, proj_size=16, bidirectional=True, batch_first=True)
        self.head = nn.Linear(32, 6)

    def forward(self, x: Tensor) -> Tensor:
        out, _ = self.rnn(x)
        return torch.log_softmax(self.head(out), -1)


class CausalDecoder(nn.Module):
    """nn.TransformerDecoder (pre-norm) with a boolean causal mask: self- and cross-attention."""

    def __init__(self) -> None:
        super().__init__()
        layer = nn.TransformerDecoderLayer(64, 4, 128, batch_first=True, norm_first=True)
        self.decoder = nn.TransformerDecoder(layer, 2)

    def forward(self, tgt: Tensor, memory: Tensor) -> Tensor:
        causal = torch.triu(torch.ones(tgt.size(1), tgt.size(1), dtype=torch.bool), 1)
        return self.decoder(tgt, memory, tgt_mask=causal)


class TwoTowerRetrieval(nn.Module):
    """A retrieval scorer as recommendation code writes one: a bag-of-words query tower
    (nn.EmbeddingBag over flat ids with offsets, optional per-id weights), an item tower whose
    features are unflattened into fields, scored by nn.CosineSimilarity and an nn.Bilinear
    interaction."""

    def __init__(self) -> None:
        super().__init__()
        self.words = nn.EmbeddingBag(100, 32, mode="sum")
        self.query = nn.Sequential(nn.Linear(32, 32), nn.ReLU())
        self.fields = nn.Sequential(nn.Linear(24, 64), nn.Unflatten(1, (4, 16)))
        self.item = nn.Linear(64, 32)
        self.cosine = nn.CosineSimilarity(dim=-1)
        self.interaction = nn.Bilinear(32, 32, 4)

    def forward(self, ids: Tensor, offsets: Tensor, item: Tensor,
                weights: Optional[Tensor] = None) -> Tuple[Tensor, Tensor]:
        query = self.query(self.words(ids, offsets, per_sample_weights=weights))
        item = self.item(self.fields(item).relu().flatten(1))
        return self.cosine(query, item), self.interaction(query, item)


def _double_conv(c_in: int, c_out: int) -> nn.Module:
    return nn.Sequential(nn.Conv2d(c_in, c_out, 3, padding=1, bias=False), nn.BatchNorm2d(c_out), nn.ReLU(inplace=True),
                         nn.Conv2d(c_out, c_out, 3, padding=1, bias=False), nn.BatchNorm2d(c_out), nn.ReLU(inplace=True))


class UNet(nn.Module):
    """A segmentation UNet as its tutorials write it: max-pooled encoder, ConvTranspose2d(2, stride 2)
    decoder whose upsampled maps are concatenated with the encoder's, a 1x1 head."""

    def __init__(self, width: int = 16) -> None:
        super().__init__()
        w = width
        self.inc = _double_conv(3, w)
        self.down1 = nn.Sequential(nn.MaxPool2d(2), _double_conv(w, 2 * w))
        self.down2 = nn.Sequential(nn.MaxPool2d(2), _double_conv(2 * w, 4 * w))
        self.up1 = nn.ConvTranspose2d(4 * w, 2 * w, 2, stride=2)
        self.conv1 = _double_conv(4 * w, 2 * w)
        self.up2 = nn.ConvTranspose2d(2 * w, w, 2, stride=2)
        self.conv2 = _double_conv(2 * w, w)
        self.head = nn.Conv2d(w, 2, 1)

    def forward(self, x: Tensor) -> Tensor:
        x1 = self.inc(x)
        x2 = self.down1(x1)
        x3 = self.down2(x2)
        x = self.conv1(torch.cat([x2, self.up1(x3)], dim=1))
        x = self.conv2(torch.cat([x1, self.up2(x)], dim=1))
        return self.head(x)


class SuperResolution(nn.Module):
    """ESPCN: tanh convolutions on the luminance, then a sub-pixel (pixel_shuffle) upsampler."""

    def __init__(self, scale: int = 3) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(1, 64, 5, padding=2)
        self.conv2 = nn.Conv2d(64, 32, 3, padding=1)
        self.conv3 = nn.Conv2d(32, scale * scale, 3, padding=1)
        self.shuffle = nn.PixelShuffle(scale)

    def forward(self, x: Tensor) -> Tensor:
        return self.shuffle(self.conv3(torch.tanh(self.conv2(torch.tanh(self.conv1(x))))))


class _ReflectConv(nn.Module):
    def __init__(self, c_in: int, c_out: int, kernel: int, stride: int = 1) -> None:
        super().__init__()
        self.pad = nn.ReflectionPad2d(kernel // 2)
        self.conv = nn.Conv2d(c_in, c_out, kernel, stride)

    def forward(self, x: Tensor) -> Tensor:
        return self.conv(self.pad(x))


class _StyleResidual(nn.Module):
    def __init__(self, channels: int) -> None:
        super().__init__()
        self.conv1 = _ReflectConv(channels, channels, 3)
        self.norm1 = nn.InstanceNorm2d(channels, affine=True)
        self.conv2 = _ReflectConv(channels, channels, 3)
        self.norm2 = nn.InstanceNorm2d(channels, affine=True)

    def forward(self, x: Tensor) -> Tensor:
        return x + self.norm2(self.conv2(torch.relu(self.norm1(self.conv1(x)))))


class StyleTransfer(nn.Module):
    """fast-neural-style's transformer net: reflection-padded convolutions, instance norm, residual
    blocks, nearest-neighbour upsampling before the decoder's convolutions (the example's width 32
    and 5 residual blocks by default)."""

    def __init__(self, width: int = 32, residual_blocks: int = 5) -> None:
        super().__init__()
        w = width
        self.encoder = nn.Sequential(
            _ReflectConv(3, w, 9), nn.InstanceNorm2d(w, affine=True), nn.ReLU(),
            _ReflectConv(w, 2 * w, 3, 2), nn.InstanceNorm2d(2 * w, affine=True), nn.ReLU(),
            _ReflectConv(2 * w, 4 * w, 3, 2), nn.InstanceNorm2d(4 * w, affine=True), nn.ReLU())
        self.residuals = nn.Sequential(*[_StyleResidual(4 * w) for _ in range(residual_blocks)])
        self.up1 = _ReflectConv(4 * w, 2 * w, 3)
        self.norm1 = nn.InstanceNorm2d(2 * w, affine=True)
        self.up2 = _ReflectConv(2 * w, w, 3)
        self.norm2 = nn.InstanceNorm2d(w, affine=True)
        self.out = _ReflectConv(w, 3, 9)

    def forward(self, x: Tensor) -> Tensor:
        y = self.residuals(self.encoder(x))
        y = torch.relu(self.norm1(self.up1(F.interpolate(y, scale_factor=2.0, mode="nearest"))))
        y = torch.relu(self.norm2(self.up2(F.interpolate(y, scale_factor=2.0, mode="nearest"))))
        return self.out(y)


class DcganGenerator(nn.Module):
    """The DCGAN tutorial's generator: a latent through ConvTranspose2d(4, 2, 1) + BatchNorm + ReLU
    to a tanh image (64x64 at full width)."""

    def __init__(self, latent: int = 100, width: int = 64) -> None:
        super().__init__()
        w = width
        self.main = nn.Sequential(
            nn.ConvTranspose2d(latent, w * 8, 4, 1, 0, bias=False), nn.BatchNorm2d(w * 8), nn.ReLU(True),
            nn.ConvTranspose2d(w * 8, w * 4, 4, 2, 1, bias=False), nn.BatchNorm2d(w * 4), nn.ReLU(True),
            nn.ConvTranspose2d(w * 4, w * 2, 4, 2, 1, bias=False), nn.BatchNorm2d(w * 2), nn.ReLU(True),
            nn.ConvTranspose2d(w * 2, w, 4, 2, 1, bias=False), nn.BatchNorm2d(w), nn.ReLU(True),
            nn.ConvTranspose2d(w, 3, 4, 2, 1, bias=False), nn.Tanh())

    def forward(self, x: Tensor) -> Tensor:
        return self.main(x)


def _padding(batch: int, length: int) -> Tensor:
    """The last quarter of every sequence but the first padded: one full-length sequence per batch."""
    mask = torch.zeros(batch, length, dtype=torch.bool)
    mask[1:, length - length // 4:] = True
    return mask


def _tokens(*shapes: Tuple[int, int]) -> List[Tuple[Tensor]]:
    return [(torch.randint(0, 100, shape),) for shape in shapes]


def _models() -> List[RealModel]:
    import torchaudio
    import torchvision
    from torchvision import models

    del torchvision  # imported for its side effect of registering torchvision ops
    vision = [
        ("resnet18", models.resnet18),
        ("resnet50", models.resnet50),
        ("mobilenet_v2", models.mobilenet_v2),
        ("mobilenet_v3_small", models.mobilenet_v3_small),
        ("efficientnet_b0", models.efficientnet_b0),
        ("densenet121", models.densenet121),
        ("googlenet", lambda: models.googlenet(aux_logits=False, init_weights=True)),
        ("convnext_tiny", models.convnext_tiny),
        ("shufflenet_v2_x0_5", models.shufflenet_v2_x0_5),
        ("squeezenet1_1", models.squeezenet1_1),
    ]
    entries = [
        RealModel(name, build, _images(3, (1, 64, 64), (2, 48, 56)), zero_fallbacks=True, calibrated=True)
        for name, build in vision
    ]
    entries += [
        # Inception v3's unpadded stride-2 reductions need at least 75x75. Folding BatchNorm into
        # its 94 convolutions moves its logits by 1e-4 of their scale (torch.jit.freeze's own
        # folding against the unfrozen module: 1.04e-4 on the first input; ours 1.12e-4).
        RealModel("inception_v3", lambda: models.inception_v3(aux_logits=False, init_weights=True),
                  _images(3, (1, 96, 96), (2, 80, 88)), zero_fallbacks=True, calibrated=True,
                  tolerance=3e-4),
        # AlexNet's adaptive pooling needs at least 63x63 to keep its 6x6 grid meaningful.
        RealModel("alexnet", models.alexnet, _images(3, (1, 64, 64), (2, 80, 72)), zero_fallbacks=True),
        # Swin pads each stage to whole windows and shifts them with roll: any size runs.
        RealModel("swin_t", models.swin_t, _images(3, (1, 64, 64), (2, 48, 56)), zero_fallbacks=True),
        # Swin V2: log-spaced continuous position bias, cosine attention, a qkv bias zeroed in place.
        RealModel("swin_v2_t", models.swin_v2_t, _images(3, (1, 64, 64), (2, 48, 56)), zero_fallbacks=True),
        # ViT takes one image size (its position embedding); 32x32 in 16x16 patches is 4 tokens.
        RealModel("vit_b_16", _vit_with_random_head, _images(3, (1, 32, 32), (3, 32, 32)), zero_fallbacks=True),
        RealModel("lraspp_mobilenet_v3_large",
                  lambda: models.segmentation.lraspp_mobilenet_v3_large(weights_backbone=None),
                  _images(3, (1, 64, 64), (2, 48, 40)), calibrated=True),
        # RAFT keeps its correlation pyramid on a submodule (written, then read, in each forward),
        # warps with grid_sample and refines with a GRU over 12 iterations.
        RealModel("raft_small", models.optical_flow.raft_small,
                  # The coarsest of its 4 correlation levels is 1/64 of the image: at least 2 pixels.
                  [(torch.randn(1, 3, 128, 128), torch.randn(1, 3, 128, 128)),
                   (torch.randn(2, 3, 128, 192), torch.randn(2, 3, 128, 192))], zero_fallbacks=True),
        # Detection: the transform builds an ImageList record and fills a zero batch through
        # copy_ into views, the model warns once through a flag on itself (state across runs),
        # and torchvision's NMS runs as its own operator. A list of images in, (losses,
        # detections) out.
        RealModel("ssdlite320_mobilenet_v3_large",
                  lambda: models.detection.ssdlite320_mobilenet_v3_large(
                      weights=None, weights_backbone=None, num_classes=5),
                  [([torch.rand(3, 320, 320), torch.rand(3, 300, 400)],), ([torch.rand(3, 256, 200)],)],
                  zero_fallbacks=True),
        # Two-stage: MultiScaleRoIAlign builds a LevelMapper record on its first call and keeps it
        # on itself (state across runs, in a cell), and its roi_align checks isinstance on a
        # Union at run time. Every proposal is kept (score threshold 0): 100 boxes to compare.
        RealModel("fasterrcnn_mobilenet_v3_large_320_fpn",
                  lambda: models.detection.fasterrcnn_mobilenet_v3_large_320_fpn(
                      weights=None, weights_backbone=None, num_classes=5, box_score_thresh=0.0),
                  [([torch.rand(3, 320, 320), torch.rand(3, 300, 400)],), ([torch.rand(3, 256, 200)],)],
                  zero_fallbacks=True, selects_by_rank=True),
        # Image-to-image networks transcribed from public examples (narrower): milesial's
        # Pytorch-UNet, pytorch/examples' super_resolution (ESPCN), fast_neural_style and the
        # DCGAN tutorial's generator.
        RealModel("unet", UNet, _images(3, (1, 32, 32), (2, 48, 40)), zero_fallbacks=True, calibrated=True),
        RealModel("espcn", SuperResolution, _images(1, (1, 32, 32), (2, 24, 20)), zero_fallbacks=True),
        RealModel("style_transfer", lambda: StyleTransfer(width=16, residual_blocks=2),
                  _images(3, (1, 32, 32), (1, 40, 24)), zero_fallbacks=True),
        RealModel("dcgan_generator", lambda: DcganGenerator(latent=32, width=16),
                  [(torch.randn(1, 32, 1, 1),), (torch.randn(3, 32, 1, 1),)], zero_fallbacks=True,
                  calibrated=True, kernels_pack_every_weight=True),
        RealModel("r3d_18", models.video.r3d_18,
                  [(torch.randn(1, 3, 4, 32, 32),), (torch.randn(2, 3, 8, 24, 28),)], zero_fallbacks=True,
                  calibrated=True),
        RealModel("wav2vec2_base", torchaudio.models.wav2vec2_base,
                  [(torch.randn(1, 4000),), (torch.randn(2, 3200),)]),
        RealModel("conv_tasnet",
                  lambda: torchaudio.models.ConvTasNet(num_sources=2, enc_num_feats=64, msk_num_feats=32,
                                                       msk_num_hidden_feats=64, msk_num_layers=2,
                                                       msk_num_stacks=2),
                  [(torch.randn(1, 1, 800),), (torch.randn(2, 1, 1200),)], zero_fallbacks=True),
        RealModel("lstm_classifier", lambda: RecurrentClassifier("LSTM"), _tokens((1, 7), (3, 11))),
        RealModel("gru_classifier", lambda: RecurrentClassifier("GRU"), _tokens((1, 7), (3, 11))),
        RealModel("transformer_encoder_padding_mask", PaddedTransformerEncoder,
                  [(torch.randn(2, 16, 128), _padding(2, 16)), (torch.randn(3, 24, 128), _padding(3, 24))]),
        RealModel("transformer_encoder_decoder", EncoderDecoder,
                  [(torch.randn(2, 10, 64), torch.randn(2, 7, 64), _padding(2, 10), _padding(2, 7)),
                   (torch.randn(3, 12, 64), torch.randn(3, 5, 64), _padding(3, 12), _padding(3, 5))]),
        RealModel("mel_spectrogram_classifier", MelSpectrogramClassifier,
                  [(torch.randn(1, 16000),), (torch.randn(3, 12000),)], zero_fallbacks=True),
        RealModel("audio_conv1d_classifier", AudioClassifier,
                  [(torch.randn(1, 8, 50),), (torch.randn(3, 8, 37),)], zero_fallbacks=True),
        RealModel("lstm_projection", ProjectedLstm,
                  [(torch.randn(1, 7, 20),), (torch.randn(3, 5, 20),)], zero_fallbacks=True),
        RealModel("lstm_packed_sequence", PackedLstm,
                  [(torch.randn(3, 7, 12), torch.tensor([7, 3, 5])),
                   (torch.randn(2, 4, 12), torch.tensor([2, 4]))], zero_fallbacks=True),
        RealModel("transformer_decoder_causal", CausalDecoder,
                  [(torch.randn(2, 7, 64), torch.randn(2, 9, 64)),
                   (torch.randn(1, 5, 64), torch.randn(1, 4, 64))], zero_fallbacks=True),
        RealModel("two_tower_retrieval", TwoTowerRetrieval,
                  [(torch.randint(0, 100, (9,)), torch.tensor([0, 4, 6]), torch.randn(3, 24)),
                   (torch.randint(0, 100, (5,)), torch.tensor([0, 5]), torch.randn(2, 24), torch.rand(5))],
                  zero_fallbacks=True),
        RealModel("multihead_attention", SelfAttention,
                  [(torch.randn(2, 9, 64), _padding(2, 9)), (torch.randn(4, 6, 64), _padding(4, 6))]),
    ]
    return entries


def entries() -> Dict[str, RealModel]:
    """Every real model, each built under its own seed so that one entry does not depend on the others."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)  # the inputs
        models = _models()
    for index, entry in enumerate(models):
        entry.seed = index
    return {entry.name: entry for entry in models}


def instantiate(entry: RealModel) -> Tuple[nn.Module, torch.jit.ScriptModule]:
    """The eager module (eval mode, seeded weights) and its TorchScript form."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(entry.seed)
        model = entry.build().eval()
    if entry.calibrated:
        from static_runtime.bench import calibrate_batch_norm

        # A batch of 8 like the first input: a batch of 1 or 2 leaves channels nearly constant,
        # whose tiny variances then blow activations up (densenet121's outputs reached 1e25).
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(entry.seed)
            calibrate_batch_norm(model, torch.randn(8, *entry.inputs[0][0].shape[1:]))
    if entry.traced:
        with torch.no_grad():
            return model, torch.jit.trace(model, entry.inputs[0])
    return model, torch.jit.script(model)


def _table() -> int:
    import static_runtime

    rows = ["| model | nodes | out-variant | native | fallback | fallback ops left |", "|---|---:|---:|---:|---:|---|"]
    missing = set()
    for entry in entries().values():
        _, scripted = instantiate(entry)
        stats = static_runtime.StaticModule(scripted).stats()
        fallbacks = ", ".join(f"`{op}` x{count}" for op, count in sorted(stats["fallback_ops"].items())) or "none"
        missing |= set(stats["fallback_ops"]) - set(FALLBACK_REASONS)
        rows.append(f"| {entry.name} | {stats['nodes']} | {stats['out_variant_nodes']} | {stats['native_nodes']} | "
                    f"{stats['fallback_nodes']} | {fallbacks} |")
    print("\n".join(rows))
    used = sorted(op for op in FALLBACK_REASONS if any(op in row for row in rows))
    print("\n| fallback op | why it remains |\n|---|---|")
    for op in used:
        print(f"| `{op}` | {FALLBACK_REASONS[op]} |")
    if missing:
        print(f"no reason recorded in FALLBACK_REASONS for: {sorted(missing)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--table", action="store_true", help="print kernel kinds and fallbacks per model")
    if parser.parse_args().table:
        sys.exit(_table())
    parser.print_help()
