"""The trainer's Remove on the grid: a confirmation naming the trainee, the row gone from every open grid,
and the removed trainee's open page saying what happened."""

from __future__ import annotations

from playwright.sync_api import expect

from tests.browser.classroom import open_new_class_links
from tests.browser.confirm import answer_confirmation
from tests.browser.test_training import join, new_window


def test_the_trainer_removes_a_row_after_a_confirmation_that_names_the_trainee(browser, page, live_server):
    join_link, trainer_link = open_new_class_links(page, live_server.url, "Training class")

    second, grid = new_window(browser)  # a second trainer screen
    contexts = [second]
    try:
        grid.goto(trainer_link)
        ada_context, ada, _ = join(browser, join_link, "Ada")
        bot_context, bot, bot_messages = join(browser, join_link, "Bot 9000")
        contexts += [ada_context, bot_context]
        for screen in (page, grid):
            screen.locator('tr[data-trainee="Bot 9000"]').wait_for()

        remove = page.get_by_role("button", name="Remove Bot 9000 from the class")
        remove.click()
        asked = answer_confirmation(page, accept=False)
        assert asked.startswith("Remove Bot 9000 from Training class?"), asked
        expect(remove).to_be_focused()  # cancelled: back on the button that asked
        assert page.locator('tr[data-trainee="Bot 9000"]').count() == 1  # dismissed: nothing sent

        remove.click()
        answer_confirmation(page)
        page.get_by_text("Bot 9000 is removed from Training class").wait_for()
        assert page.locator('tr[data-trainee="Bot 9000"]').count() == 0
        # The other trainer screen drops the row at its next poll, without a reload; Ada stays.
        grid.evaluate("window.__notReloaded = true")
        grid.locator('tr[data-trainee="Bot 9000"]').wait_for(state="detached")
        assert grid.locator('tr[data-trainee="Ada"]').count() == 1
        assert grid.evaluate("window.__notReloaded") is True
        # The removed trainee's open page reloads by itself and says so.
        bot.locator("#class-removed").get_by_text("Your trainer removed you from the class").wait_for()
        assert ada.locator("#class-removed").count() == 0
        assert not [m for m in bot_messages if m.startswith("error")], bot_messages
    finally:
        for context in contexts:
            context.close()
