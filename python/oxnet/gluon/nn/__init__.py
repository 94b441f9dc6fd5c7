"""Neural-network layers (``mx.gluon.nn``): containers, Dense, Dropout,
Flatten, Embedding, Lambda blocks and activations."""

from .basic_layers import (Sequential, HybridSequential, Dense, Dropout, Flatten, Embedding, Identity, Lambda,
                           HybridLambda)
from .activations import Activation, LeakyReLU, PReLU, ELU, SELU, Swish, GELU
from ..block import Block, HybridBlock, SymbolBlock

__all__ = ["Sequential", "HybridSequential", "Dense", "Dropout", "Flatten", "Embedding", "Identity", "Lambda",
           "HybridLambda", "Activation", "LeakyReLU", "PReLU", "ELU", "SELU", "Swish", "GELU", "Block",
           "HybridBlock", "SymbolBlock"]
