"""autograd-lint: a linter for PyTorch custom ``torch.autograd.Function`` classes."""

__version__ = "0.1.0"
