from autograd_lint.cli import run

run()
