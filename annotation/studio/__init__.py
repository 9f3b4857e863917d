"""The lead's pages: study builder, settings, launch, overview and people."""
