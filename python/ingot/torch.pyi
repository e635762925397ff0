# Type stubs of ingot.torch.
import os
from typing import Dict, Mapping, Optional, Union

import torch

def load_file(filename: Union[str, os.PathLike], device: Union[str, torch.device] = ...,
              *, copy: bool = ...) -> Dict[str, torch.Tensor]: ...
def load(filename: Union[str, os.PathLike], device: Union[str, torch.device] = ...,
         *, copy: bool = ...) -> Dict[str, torch.Tensor]: ...
def save_file(tensors: Mapping[str, torch.Tensor], filename: Union[str, os.PathLike],
              metadata: Optional[Mapping[str, str]] = ..., *,
              format: Optional[str] = ...) -> list: ...
