"""aimon's command line: the Typer app, print mode, the REPL and the renderer."""
