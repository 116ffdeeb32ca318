# Thin wrappers; the scripts are the source of truth and run the same in .ci/run.
.PHONY: dev test protos lint fix typecheck deploy-check ci

dev:
	uv run workcoord dev

test:
	uv run scripts/test

protos:
	uv run python scripts/gen_protos.py

lint:
	scripts/lint

fix:
	scripts/lint --fix

typecheck:
	scripts/typecheck

deploy-check:
	scripts/install-kubectl >/dev/null
	uv run python scripts/check_deploy.py --start

ci:
	bash .ci/run
