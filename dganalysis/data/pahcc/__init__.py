"""PaHCC: printed (d0 standard, d1 distorted, d2 handwriting-style) and handwritten (hw) Chinese characters.

Paper: Zhang, Zhang & Liu, Sec. 3 (Fig. 7, Tables 3–6). ``build_pahcc`` builds the dataset from installed fonts
and simulated (or real CASIA-HWDB) handwriting; ``pahcc_stats`` gives Tables 3–6-style statistics.
Fonts and stroke data: ``bash dganalysis/data/pahcc/install_fonts.sh``.
"""

from dganalysis.data.pahcc.build import DOMAINS, build_pahcc, pahcc_stats
from dganalysis.data.pahcc.classes import all_classes, is_gb2312_level1, pahcc_classes
from dganalysis.data.pahcc.fonts import FontFace, assign_domains, discover_fonts, load_font_config
from dganalysis.data.pahcc.gnt import iter_gnt, paste_global, read_gnt_dir, write_gnt

__all__ = [
    "DOMAINS", "FontFace", "all_classes", "assign_domains", "build_pahcc", "discover_fonts", "is_gb2312_level1",
    "iter_gnt", "load_font_config", "pahcc_classes", "pahcc_stats", "paste_global", "read_gnt_dir", "write_gnt",
]
