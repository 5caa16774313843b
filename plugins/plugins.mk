# Plugins are optional shared objects (cuda, nccl) loaded at run time.
# Filled in by the plugin build; the core binary never links CUDA or NCCL.
plugins:
install_plugins =
