"""`import torch` resolved to autodiff's torch face (this directory goes first on sys.path).

Importing this stand-in installs the suite's finder (torchshim) and puts the `autodiff`
module itself in `sys.modules["torch"]`, so `import torch` gives autodiff and
`import torch.autograd` gives `autodiff.autograd`: the import statement returns what
`sys.modules` holds once this module has run.
"""

import os
import sys

sys.path.insert(1, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

import torchshim

torchshim.install()
