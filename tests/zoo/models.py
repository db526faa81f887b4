"""The zoo: real library models (random weights, small configs) that users bring.

Each entry is a ZooModel: a name, its family (the library it comes from), a
constructor and the example inputs at a batch size. Nothing is downloaded:
every model is built from its library's constructor or config.

    models.load(name)      -> the eval-mode module
    models.inputs(name, b) -> the example inputs (a tuple of tensors) at batch b

The export batch is EXPORT_BATCH; OTHER_BATCH is the second size the files
that allow it are run at. `fast` marks the subset `make test` runs (one per
family, about a dozen). Changing an entry changes its digest, and `make zoo`
makes its files again.
"""
import contextlib
import inspect
import warnings
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Tuple

import torch
from torch import nn

warnings.filterwarnings("ignore")

EXPORT_BATCH = 2
OTHER_BATCH = 3


@dataclass
class ZooModel:
    name: str
    family: str
    make: Callable[[], nn.Module]
    example: Callable[[int], Tuple[torch.Tensor, ...]]
    fast: bool = False
    # artifacts this model skips, with the reason (for models whose export
    # would take the whole budget; never for one that merely fails)
    skip: Dict[str, str] = field(default_factory=dict)
    # the dims of each input that may change between runs (input index → axes)
    dynamic_axes: Dict[int, List[int]] = field(default_factory=lambda: {0: [0]})


ZOO: List[ZooModel] = []


def zoo(name, family, example, fast=False, **kwargs):
    def register(make):
        ZOO.append(ZooModel(name, family, make, example, fast=fast, **kwargs))
        return make
    return register


def image(size, channels=3):
    return lambda b: (torch.randn(b, channels, size, size, generator=torch.Generator().manual_seed(b)),)


def tokens(length, vocab=100, seed=0):
    return lambda b: (torch.randint(1, vocab, (b, length), generator=torch.Generator().manual_seed(b + seed)),)


# ------------------------------------------------------------------ torchvision

_torchvision = None


def torchvision():
    """torchvision 0.28.0 on this disk is a CUDA build: its compiled ops do not load
    beside the CPU torch and its fake-op registrations fail at import. Its models
    are plain Python, so import it with torch.library.register_fake disabled."""
    global _torchvision
    if _torchvision is None:
        original = torch.library.register_fake

        def no_fake(op, func=None, *args, **kwargs):
            return (lambda f: f) if func is None else None
        torch.library.register_fake = no_fake
        try:
            import torchvision as tv
        finally:
            torch.library.register_fake = original
        _torchvision = tv
    return _torchvision


def tv_model(name, size=64, fast=False, **kwargs):
    zoo("tv_" + name, "torchvision", image(size), fast=fast)(
        lambda: getattr(torchvision().models, name)(weights=None, **kwargs))


for _name, _size, _fast in [
        ("alexnet", 224, False), ("convnext_tiny", 64, False), ("densenet121", 64, False),
        ("efficientnet_b0", 64, True), ("efficientnet_v2_s", 64, False), ("googlenet", 64, False),
        ("mnasnet0_5", 64, False), ("mobilenet_v2", 64, False), ("mobilenet_v3_small", 64, False),
        ("regnet_y_400mf", 64, False), ("resnet18", 64, True), ("resnet50", 64, False),
        ("resnext50_32x4d", 64, False), ("shufflenet_v2_x0_5", 64, False), ("squeezenet1_1", 64, False),
        ("swin_t", 64, False), ("vgg11", 224, False), ("wide_resnet50_2", 64, False)]:
    tv_model(_name, _size, _fast)
tv_model("inception_v3", 96, init_weights=False, aux_logits=False)
tv_model("mobilenet_v3_large", 64)


@zoo("tv_vit_small", "torchvision", image(64))
def _tv_vit():
    return torchvision().models.VisionTransformer(
        image_size=64, patch_size=16, num_layers=2, num_heads=4, hidden_dim=64, mlp_dim=128, num_classes=10)


class SegmentationMap(nn.Module):
    """torchvision's segmentation models return {"out": map}; deployments keep the map."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x):
        return self.model(x)["out"]


@zoo("tv_deeplabv3_mobilenet", "torchvision", image(64), fast=True)
def _tv_deeplab():
    return SegmentationMap(torchvision().models.segmentation.deeplabv3_mobilenet_v3_large(
        weights=None, weights_backbone=None, num_classes=4, aux_loss=False))


@zoo("tv_lraspp_mobilenet", "torchvision", image(64))
def _tv_lraspp():
    return SegmentationMap(torchvision().models.segmentation.lraspp_mobilenet_v3_large(
        weights=None, weights_backbone=None, num_classes=4))


@zoo("tv_r3d_18", "torchvision", lambda b: (torch.randn(b, 3, 4, 32, 32, generator=torch.Generator().manual_seed(b)),))
def _tv_r3d():
    return torchvision().models.video.r3d_18(weights=None, num_classes=10)


@zoo("tv_raft_small", "torchvision",
     lambda b: (torch.randn(b, 3, 128, 128, generator=torch.Generator().manual_seed(b)),
                torch.randn(b, 3, 128, 128, generator=torch.Generator().manual_seed(b + 10))),
     dynamic_axes={0: [0], 1: [0]})
def _tv_raft():
    return RaftFinalFlow(torchvision().models.optical_flow.raft_small(weights=None))


class RaftFinalFlow(nn.Module):
    """RAFT returns the flow after every update; deployments keep the last."""

    def __init__(self, raft):
        super().__init__()
        self.raft = raft

    def forward(self, image1, image2):
        return self.raft(image1, image2, num_flow_updates=2)[-1]


# ------------------------------------------------------------------ timm

def timm_model(name, size=64, fast=False, **kwargs):
    def make():
        torchvision()  # timm imports torchvision
        import timm
        return timm.create_model(name, pretrained=False, num_classes=10, **kwargs)
    zoo("timm_" + name, "timm", image(size), fast=fast)(make)


timm_model("levit_128s", 64, img_size=64)
timm_model("poolformer_s12", 64)
timm_model("mixer_s16_224", 64, img_size=64, fast=True)
timm_model("coatnet_nano_rw_224", 64, img_size=64)
timm_model("efficientformer_l1", 224)
timm_model("maxvit_nano_rw_256", 64, img_size=64)
timm_model("repvgg_a0", 64)
timm_model("ghostnet_100", 64)
timm_model("mobilevit_xxs", 64)
timm_model("edgenext_xx_small", 64)
timm_model("pvt_v2_b0", 64)
timm_model("xcit_nano_12_p16_224", 64, img_size=64)
timm_model("fastvit_t8", 64)
timm_model("efficientvit_b0", 64)
timm_model("convit_tiny", 64, img_size=64)
timm_model("dla34", 64)
timm_model("rexnet_100", 64)
timm_model("deit_tiny_patch16_224", 64, img_size=64)


# ------------------------------------------------------------------ transformers

class TupleOutputs(nn.Module):
    """A transformers model called with keyword inputs, returning a tuple."""

    def __init__(self, model, keys):
        super().__init__()
        self.model = model
        self.keys = keys

    def forward(self, *args):
        out = self.model(**dict(zip(self.keys, args)))
        values = out.to_tuple() if hasattr(out, "to_tuple") else out
        return tuple(v for v in (values if isinstance(values, (tuple, list)) else [values]) if torch.is_tensor(v))


def hf(name, config_class, fast=False, example=None, keys=("input_ids",), model_class=None, **config):
    def make():
        torchvision()  # transformers imports torchvision when it is installed
        import transformers
        cfg = getattr(transformers, config_class)(use_cache=False, **config)
        cls = getattr(transformers, model_class or config_class.replace("Config", "Model"))
        torch.manual_seed(0)
        model = cls(cfg).eval()
        if hasattr(model.config, "_attn_implementation"):
            model.config._attn_implementation = "eager"
        return TupleOutputs(model, list(keys))
    zoo("hf_" + name, "transformers", example or tokens(16), fast=fast,
        dynamic_axes={i: [0] for i in range(len(keys))})(make)


SMALL = dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128, vocab_size=100)
DECODER = dict(SMALL, num_key_value_heads=2, max_position_embeddings=64)

hf("bert", "BertConfig", fast=True, **SMALL)
hf("roberta", "RobertaConfig", **SMALL)
hf("deberta_v2", "DebertaV2Config", **SMALL)
hf("distilbert", "DistilBertConfig", vocab_size=100, dim=64, n_layers=2, n_heads=4, hidden_dim=128)
hf("gpt2", "GPT2Config", vocab_size=100, n_embd=64, n_layer=2, n_head=4, n_positions=64)
hf("llama", "LlamaConfig", fast=True, model_class="LlamaForCausalLM", **DECODER)
hf("qwen2", "Qwen2Config", model_class="Qwen2ForCausalLM", **DECODER)
hf("mistral", "MistralConfig", model_class="MistralForCausalLM", **DECODER)
hf("phi", "PhiConfig", model_class="PhiForCausalLM", **DECODER)
hf("gemma", "GemmaConfig", model_class="GemmaForCausalLM", head_dim=16, **DECODER)
hf("gpt_neox", "GPTNeoXConfig", model_class="GPTNeoXForCausalLM", **SMALL)
hf("t5", "T5Config", fast=True, model_class="T5Model", keys=("input_ids", "decoder_input_ids"),
   example=lambda b: tokens(16)(b) + tokens(8, seed=7)(b),
   vocab_size=100, d_model=64, d_kv=16, d_ff=128, num_layers=2, num_heads=4)
hf("bart", "BartConfig", keys=("input_ids", "decoder_input_ids"),
   example=lambda b: tokens(16)(b) + tokens(8, seed=7)(b),
   vocab_size=100, d_model=64, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
   decoder_attention_heads=4, encoder_ffn_dim=128, decoder_ffn_dim=128, max_position_embeddings=64)
hf("whisper", "WhisperConfig", keys=("input_features", "decoder_input_ids"),
   example=lambda b: (torch.randn(b, 16, 64, generator=torch.Generator().manual_seed(b)),) + tokens(8, seed=7)(b),
   vocab_size=100, num_mel_bins=16, d_model=64, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
   decoder_attention_heads=4, encoder_ffn_dim=128, decoder_ffn_dim=128, max_source_positions=32,
   max_target_positions=32, pad_token_id=0, bos_token_id=1, eos_token_id=2, decoder_start_token_id=1)
VISION = dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128,
              image_size=32, patch_size=8)
hf("vit", "ViTConfig", fast=True, keys=("pixel_values",), example=image(32), **VISION)
hf("swin", "SwinConfig", keys=("pixel_values",), example=image(32),
   image_size=32, patch_size=2, embed_dim=16, depths=[1, 1], num_heads=[2, 2], window_size=4)
hf("convnext", "ConvNextConfig", keys=("pixel_values",), example=image(32),
   hidden_sizes=[16, 32], depths=[1, 1], num_stages=2)
hf("clip_vision", "CLIPVisionConfig", keys=("pixel_values",), example=image(32), **VISION)
hf("siglip_vision", "SiglipVisionConfig", keys=("pixel_values",), example=image(32), **VISION)
hf("clip_text", "CLIPTextConfig", model_class="CLIPTextModel", max_position_embeddings=32, **SMALL)
hf("wav2vec2", "Wav2Vec2Config", fast=True, keys=("input_values",),
   example=lambda b: (torch.randn(b, 800, generator=torch.Generator().manual_seed(b)),),
   hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
   conv_dim=(16, 16), conv_stride=(5, 2), conv_kernel=(10, 3), num_conv_pos_embeddings=16,
   num_conv_pos_embedding_groups=4, do_stable_layer_norm=False, vocab_size=32)
hf("detr", "DetrConfig", keys=("pixel_values",), example=image(64),
   use_timm_backbone=False, use_pretrained_backbone=False,
   backbone_config={"model_type": "resnet", "embedding_size": 16, "hidden_sizes": [16, 32, 64, 128],
                    "depths": [1, 1, 1, 1], "out_features": ["stage4"]},
   d_model=32, encoder_layers=1, decoder_layers=1, encoder_attention_heads=2, decoder_attention_heads=2,
   encoder_ffn_dim=64, decoder_ffn_dim=64, num_queries=10)
hf("sam_vision", "SamVisionConfig", keys=("pixel_values",), example=image(64),
   hidden_size=32, output_channels=16, num_hidden_layers=2, num_attention_heads=2, image_size=64,
   patch_size=16, window_size=2, global_attn_indexes=[1], mlp_dim=64)


# ------------------------------------------------------------------ ultralytics, segment-anything, diffusers

class FirstOutput(nn.Module):
    """Deployment keeps a model's first output (YOLO's predictions)."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x):
        out = self.model(x)
        return out[0] if isinstance(out, (tuple, list)) else out


def yolo(task, yaml, fast=False):
    def make():
        torchvision()  # ultralytics imports torchvision
        with contextlib.redirect_stdout(None):
            from ultralytics.nn.tasks import yaml_model_load, guess_model_task
            from ultralytics.nn import tasks
            cls = {"detect": tasks.DetectionModel, "segment": tasks.SegmentationModel,
                   "pose": tasks.PoseModel}[task]
            model = cls(yaml, verbose=False)
        model.fuse = None
        return FirstOutput(model.eval())
    zoo("yolo_" + task, "ultralytics", image(64), fast=fast)(make)


yolo("detect", "yolov8n.yaml", fast=True)
yolo("segment", "yolov8n-seg.yaml")
yolo("pose", "yolov8n-pose.yaml")


@zoo("sam_image_encoder", "segment-anything", image(64), fast=True)
def _sam():
    from segment_anything.modeling import ImageEncoderViT
    return ImageEncoderViT(img_size=64, patch_size=16, embed_dim=64, depth=2, num_heads=2,
                           out_chans=32, use_rel_pos=True, window_size=2, global_attn_indexes=(1,))


class UNetSample(nn.Module):
    def __init__(self, unet):
        super().__init__()
        self.unet = unet

    def forward(self, sample, timestep):
        return self.unet(sample, timestep, return_dict=False)[0]


@zoo("diffusers_unet2d", "diffusers",
     lambda b: (torch.randn(b, 3, 32, 32, generator=torch.Generator().manual_seed(b)),
                torch.full((b,), 10, dtype=torch.int64)),
     dynamic_axes={0: [0], 1: [0]})
def _unet():
    from diffusers import UNet2DModel
    torch.manual_seed(0)
    return UNetSample(UNet2DModel(sample_size=32, in_channels=3, out_channels=3, layers_per_block=1,
                                  block_out_channels=(16, 32), norm_num_groups=8,
                                  down_block_types=("DownBlock2D", "AttnDownBlock2D"),
                                  up_block_types=("AttnUpBlock2D", "UpBlock2D")))


class VaeDecode(nn.Module):
    def __init__(self, vae):
        super().__init__()
        self.vae = vae

    def forward(self, latents):
        return self.vae.decode(latents, return_dict=False)[0]


@zoo("diffusers_vae_decoder", "diffusers", image(8, channels=4))
def _vae():
    from diffusers import AutoencoderKL
    torch.manual_seed(0)
    return VaeDecode(AutoencoderKL(in_channels=3, out_channels=3, latent_channels=4, block_out_channels=(16, 32),
                                   down_block_types=("DownEncoderBlock2D",) * 2,
                                   up_block_types=("UpDecoderBlock2D",) * 2, norm_num_groups=8,
                                   layers_per_block=1))


# ------------------------------------------------------------------ access

BY_NAME = {m.name: m for m in ZOO}


def load(name):
    torch.manual_seed(0)
    return BY_NAME[name].make().eval()


def inputs(name, batch):
    return BY_NAME[name].example(batch)


def source_of(name):
    """The text a model's files depend on: this module's text (any change remakes all)."""
    return inspect.getsource(inspect.getmodule(load))
