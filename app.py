"""dplens entry point: page config, shared state and sidebar, navigation (pages listed in ui.PAGES)."""

import streamlit as st

from dplens import ui


def main() -> None:
    st.set_page_config(page_title="dplens — DP histograms lab", page_icon=":material/query_stats:", layout="wide")
    ui.init_state()
    ui.warm_workers()  # the first Spend and release and the first Compare do not wait for worker processes
    sections: dict[str, list] = {}
    for section, path, title, icon in ui.PAGES:
        sections.setdefault(section, []).append(st.Page(path, title=title, icon=icon, default=path == ui.PAGES[0][1]))
    page = st.navigation(sections)
    ui.current_curator()  # shared server: sign in first (the page stops here until then); localhost: "local"
    with ui.guard():
        ui.open_workspace()  # ?ws=<id>: reload and Back restore the curator's own working set
        ui.sidebar()
    try:
        page.run()
    finally:
        ui.save_workspace()


# Streamlit runs this script as __main__; worker processes started by multiprocessing import it as __mp_main__
# and must not run the app (nor start workers of their own).
if __name__ == "__main__":
    main()
