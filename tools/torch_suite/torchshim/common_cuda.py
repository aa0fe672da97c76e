"""torch.testing._internal.common_cuda's flags: no CUDA here."""

TEST_CUDA = TEST_MULTIGPU = TEST_CUDNN = TEST_CUDA_GRAPH = False
PLATFORM_SUPPORTS_FLASH_ATTENTION = PLATFORM_SUPPORTS_MEM_EFF_ATTENTION = False
SM80OrLater = SM90OrLater = False
