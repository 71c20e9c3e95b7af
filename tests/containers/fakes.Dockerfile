# The fakes of Telegram, the LLM and Open-Meteo (tests/fakes) as one image, for the container
# tests: on top of the weather image, whose venv holds what they import (starlette,
# uvicorn, httpx2, mcp). Build the stack's images first.
ARG TAG=latest
FROM clawmesh/weather:${TAG}
COPY tests/fakes /fakes/fakes
ENV PYTHONPATH=/fakes
ENTRYPOINT ["python", "-m", "fakes.standalone"]
