"""Hardware: the GPU catalog and whether an estimate fits a card."""
