"""The modelplane CrossGuard policy pack: policies in importable modules, the PolicyPack in `__main__`."""
