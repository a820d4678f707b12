"""The gpuwatch wheel's one piece setuptools cannot say in pyproject.toml:
its tag. The wheel holds a compiled program but no extension module, so it
fits every Python 3 (py3-none) on one platform, which scripts/wheel.sh
names (--plat-name manylinux_2_X_<arch>, X read from the binary's glibc
symbol versions). Built only by scripts/wheel.sh."""

import os

from setuptools import Distribution, setup
from distutils.command.build_scripts import build_scripts
from wheel.bdist_wheel import bdist_wheel


class platform_wheel(bdist_wheel):
    """bdist_wheel for a program: platform-specific, any Python 3."""

    def get_tag(self):
        _, _, plat = super().get_tag()
        return "py3", "none", plat


class BinaryDistribution(Distribution):
    """A distribution with a compiled part: its wheel's root is platlib
    (Root-Is-Purelib: false), the packages beside the binary's script."""

    def has_ext_modules(self):
        return True


class copy_binary(build_scripts):
    """build_scripts for an ELF binary: copied as it is (distutils reads a
    script as Python source to rewrite its #! line, and fails on one)."""

    def copy_scripts(self):
        self.mkpath(self.build_dir)
        outfiles = []
        for script in self.scripts:
            out = os.path.join(self.build_dir, os.path.basename(script))
            self.copy_file(script, out)
            os.chmod(out, 0o755)
            outfiles.append(out)
        return outfiles, outfiles


setup(distclass=BinaryDistribution, cmdclass={"bdist_wheel": platform_wheel, "build_scripts": copy_binary})
