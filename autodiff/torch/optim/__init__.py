"""autodiff.optim: torch.optim's optimizers (SGD, Adam, AdamW, RMSprop, Adagrad) and
learning-rate schedules, with torch's update formulas.

Updates run in place under no_grad on the parameters' own memory; builds on autodiff.nn
(zero_grad) and the torch face's autograd.
"""

from autodiff.torch.optim import lr_scheduler
from autodiff.torch.optim.adagrad import Adagrad
from autodiff.torch.optim.adam import Adam, AdamW
from autodiff.torch.optim.optimizer import Optimizer
from autodiff.torch.optim.rmsprop import RMSprop
from autodiff.torch.optim.sgd import SGD

__all__ = ["Adagrad", "Adam", "AdamW", "Optimizer", "RMSprop", "SGD", "lr_scheduler"]
