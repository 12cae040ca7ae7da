"""The torchvision-style scripts are data of test_torchvision_scripts.py, not modules to
collect: importing one (for its doctests) would import torchvision itself."""

collect_ignore = ["torchvision_scripts"]
